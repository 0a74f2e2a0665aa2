import { futimesSync } from 'node:fs';
import { lstat, unlink } from 'node:fs/promises';
import { movesDigest } from '../../core/tools/fs/move-plan';
import { ToolRefusal } from '../../core/tools/tool-refusal';
import type { UndoManyTarget } from '../../core/tools/undo';
import { ErrnoError, O_CREAT, O_EXCL, O_NOFOLLOW, O_WRONLY, errnoCode, openFd, procPath, release } from '../fs/descriptors';
import { type Pinned, pin } from '../fs/pinned-path';
import type { Roots } from '../fs/roots';
import { pathDigest } from '../stores/nonces/store';
import type { UndoRecord, UndoRecords } from '../stores/nonces/undo-records';
import { UNDOING_NAME, inCallFolder, withCallFolder } from './call-folder';
import { type ChangeOf, callOf, changeOf, sameFile } from './restore-context';
import type { TreeLimits } from './tree';

/** A bulk move's undo, entry by entry: where each entry is now, pinned where it must go back, and the mark an undo leaves while it runs. */

export const LIVE_MS = 10_000;

export type Entry = ChangeOf<'moved_many'>['entries'][number];

/** Where one moved entry is now: back at its old place, back with its destination name not yet removed, still moved, or neither. */
export type Place = { readonly kind: 'back' | 'half' | 'moved' } | { readonly kind: 'problem'; readonly why: string };

export interface RestoreManyDeps {
  readonly roots: Roots;
  readonly records: UndoRecords | undefined;
  readonly treeLimits?: TreeLimits;
  readonly hashLimitBytes?: number;
  readonly now: () => number;
  /** TEST ONLY: called before each entry moved back, with how many went back so far. */
  readonly midUndo?: (back: number) => Promise<void>;
}

export const entries = (n: number) => `${n} ${n === 1 ? 'entry' : 'entries'}`;

/** The call's entries its record does not hold (not moved, or left neither moved nor in place by a kill): never touched by the undo. */
export function notMoved(change: ChangeOf<'moved_many'>): string {
  const left = change.count - change.entries.length;
  return left === 0 ? '' : `; ${entries(left)} of the call's ${change.count} ${left === 1 ? 'was' : 'were'} not moved by it and ${left === 1 ? 'was' : 'were'} left as ${left === 1 ? 'it is' : 'they are'}`;
}

/** The record's bulk move, once the moves named are exactly the call's list (each path as the call named it, in its order). */
export function manyOf(deps: RestoreManyDeps, record: UndoRecord, t: UndoManyTarget): ChangeOf<'moved_many'> {
  const change = changeOf(record);
  if (change.kind !== 'moved_many') throw new ToolRefusal(`${callOf(t)} was not a bulk move; name the path it changed`);
  if (t.moves.length !== change.count) throw new ToolRefusal(`${callOf(t)} made ${change.count} moves and ${t.moves.length} are named; name its whole list of moves`);
  if (movesDigest(t.moves, deps.roots.configured[0] ?? '/') !== change.list) throw new ToolRefusal(`the moves named are not the list ${callOf(t)} made; name that call's moves as it made them`);
  return change;
}

export function pinPath(deps: RestoreManyDeps, path: string): Pinned {
  try {
    return pin(deps.roots, path, { follow: false });
  } catch (err) {
    if (err instanceof ErrnoError && (err.code === 'ENOENT' || err.code === 'ENOTDIR')) throw new ToolRefusal(`the folder ${path} was in is not there now; recreate it, then undo again`);
    throw err;
  }
}

/** Runs `use` on an entry's old place and destination, pinned without following a final link and checked to be the paths the move named. */
export async function withEntry<T>(deps: RestoreManyDeps, t: UndoManyTarget, e: Entry, use: (from: Pinned, to: Pinned) => Promise<T>): Promise<T> {
  const named = t.moves[e.index];
  if (named === undefined) throw new ToolRefusal(`${callOf(t)}'s move ${e.index + 1} is not named`);
  const from = pinPath(deps, named.from);
  try {
    const to = pinPath(deps, named.to);
    try {
      if (pathDigest(from.path) !== e.from || pathDigest(to.path) !== e.to) throw new ToolRefusal(`move ${e.index + 1} (${named.from} → ${named.to}) is not the one ${callOf(t)} made; name that call's moves as it made them`);
      return await use(from, to);
    } finally {
      to.close();
    }
  } finally {
    from.close();
  }
}

/**
 * Where the entry is, told by device and inode (a rename and a link keep
 * both); `strict` (finishing an undo a kill cut, which checks no content):
 * a file must keep its modification time too, as a rename does.
 */
export function placeOf(e: Entry, from: Pinned, to: Pinned, strict = false): Place {
  const { dev, ino, mtimeMs } = e.held;
  if (dev === undefined || ino === undefined) return { kind: 'problem', why: `the record does not say which entry went to ${to.path}` };
  // Its birth time (where recorded) tells the moved entry from one made later under a reused inode number.
  const is = (p: Pinned) => sameFile(p.stats, { dev, ino, born: e.born }) && (!strict || mtimeMs === undefined || p.stats?.mtimeMs === mtimeMs);
  // Back: whatever is at the destination now is someone else's (or the same file under both names, an undo cut between its link and its unlink).
  if (is(from)) return is(to) ? { kind: 'half' } : { kind: 'back' };
  if (from.stats !== null) return { kind: 'problem', why: `${from.path} exists again (made after the move); move or delete it first` };
  if (!is(to)) return { kind: 'problem', why: `${to.path} is not the entry the move put there (moved on or replaced since)` };
  return { kind: 'moved' };
}

export function problemsText(problems: readonly string[]): string {
  const shown = problems.slice(0, 3).join('; ');
  return problems.length > 3 ? `${shown} (and ${problems.length - 3} more)` : shown;
}

/** The `undoing` mark of a record: held open and touched while entries go back. */
export interface UndoingMark {
  touch(): void;
  done(): Promise<void>;
}

/** How long ago the record's mark was last touched; undefined when there is none. */
export async function markAge(record: UndoRecord, now: number): Promise<number | undefined> {
  const seen = await inCallFolder(record.root, record.nonce, async (own) => lstat(procPath(own, UNDOING_NAME)).catch(() => undefined));
  return seen === undefined ? undefined : now - seen.mtimeMs;
}

/** Takes the mark: a new one, or one an undo killed part way left untouched; refused while another undo touches it. */
export async function takeMark(record: UndoRecord, t: UndoManyTarget, now: number): Promise<UndoingMark> {
  const fd = await withCallFolder(record.root, record.nonce, async (own) => {
    const path = procPath(own, UNDOING_NAME);
    try {
      return openFd(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600);
    } catch (err) {
      if (errnoCode(err) !== 'EEXIST') throw err;
    }
    const seen = await lstat(path);
    if (now - seen.mtimeMs < LIVE_MS) throw new ToolRefusal(`another undo of ${callOf(t)} is moving its entries back right now; nothing was moved`);
    return openFd(path, O_WRONLY | O_NOFOLLOW);
  });
  let last = 0;
  const touch = () => {
    const at = Date.now();
    if (at - last < 500) return;
    last = at;
    futimesSync(fd, at / 1000, at / 1000);
  };
  touch();
  return {
    touch,
    async done() {
      release(fd);
      await inCallFolder(record.root, record.nonce, async (own) => unlink(procPath(own, UNDOING_NAME)).catch(() => undefined));
    },
  };
}
