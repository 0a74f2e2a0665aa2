import { futimesSync } from 'node:fs';
import { lstat, unlink } from 'node:fs/promises';
import type { ToolOutcome } from '../../core/tools/outcome';
import { ToolRefusal } from '../../core/tools/tool-refusal';
import type { Undoable, UndoManyTarget } from '../../core/tools/undo';
import { pathDigest } from '../stores/nonces/store';
import type { UndoRecord, UndoRecords } from '../stores/nonces/undo-records';
import type { Roots } from '../fs/roots';
import { clearCallFolder, inCallFolder, UNDOING_NAME, withCallFolder } from './call-folder';
import { ErrnoError, errnoCode, O_CREAT, O_EXCL, O_NOFOLLOW, O_WRONLY, openFd, procPath, release } from '../fs/descriptors';
import { observePinned } from './observe';
import { pin, type Pinned } from '../fs/pinned-path';
import { movesDigest } from '../../core/tools/fs/move-plan';
import { callOf, changeOf, recordOf, refusing, sameFile, stillHeld, type ChangeOf } from './restore-context';
import { changedSince } from './restore-entry';
import { entryBack } from './restore-move';
import type { TreeLimits } from './tree';

/**
 * Undo of a bulk move: every entry it moved goes back from its destination
 * to where it was, one by one, each only while it is still the entry that
 * was moved (its inode, checked again after its own move back) and its old
 * place is free. The whole set is checked first (inode, mode, content or
 * tree digest of each), and nothing moves back while any entry fails it.
 *
 * While entries go back, an `undoing` mark in the call's folder is touched
 * at least every entry: an undo killed part way leaves its mark untouched,
 * and the retry (or the next undo of the call) finishes the rest, checking
 * each remaining entry's inode; a mark touched within `LIVE_MS` belongs to
 * an undo still running, and a second undo refuses meanwhile. An undo that
 * stops at an entry someone changed in the instant after the check leaves
 * the entries before it back, says so, and a later undo moves the rest.
 */

/** A mark untouched this long was left by an undo that died (a retry comes only after the 15 s heartbeat timeout and the 20 s claim). */
const LIVE_MS = 10_000;

type Entry = ChangeOf<'moved_many'>['entries'][number];

/** Where one moved entry is now: back at its old place, back with its destination name not yet removed, still moved, or neither. */
type Place = { readonly kind: 'back' | 'half' | 'moved' } | { readonly kind: 'problem'; readonly why: string };

export interface RestoreManyDeps {
  readonly roots: Roots;
  readonly records: UndoRecords | undefined;
  readonly treeLimits?: TreeLimits;
  readonly hashLimitBytes?: number;
  readonly now: () => number;
  /** TEST ONLY: called before each entry moved back, with how many went back so far. */
  readonly midUndo?: (back: number) => Promise<void>;
}

const entries = (n: number) => `${n} ${n === 1 ? 'entry' : 'entries'}`;

/** The call's entries its record does not hold (not moved, or left neither moved nor in place by a kill): never touched by the undo. */
function notMoved(change: ChangeOf<'moved_many'>): string {
  const left = change.count - change.entries.length;
  return left === 0 ? '' : `; ${entries(left)} of the call's ${change.count} ${left === 1 ? 'was' : 'were'} not moved by it and ${left === 1 ? 'was' : 'were'} left as ${left === 1 ? 'it is' : 'they are'}`;
}

/** The record's bulk move, once the moves named are exactly the call's list (each path as the call named it, in its order). */
function manyOf(deps: RestoreManyDeps, record: UndoRecord, t: UndoManyTarget): ChangeOf<'moved_many'> {
  const change = changeOf(record);
  if (change.kind !== 'moved_many') throw new ToolRefusal(`${callOf(t)} was not a bulk move; name the path it changed`);
  if (t.moves.length !== change.count) throw new ToolRefusal(`${callOf(t)} made ${change.count} moves and ${t.moves.length} are named; name its whole list of moves`);
  if (movesDigest(t.moves, deps.roots.configured[0] ?? '/') !== change.list) throw new ToolRefusal(`the moves named are not the list ${callOf(t)} made; name that call's moves as it made them`);
  return change;
}

function pinPath(deps: RestoreManyDeps, path: string): Pinned {
  try {
    return pin(deps.roots, path, { follow: false });
  } catch (err) {
    if (err instanceof ErrnoError && (err.code === 'ENOENT' || err.code === 'ENOTDIR')) throw new ToolRefusal(`the folder ${path} was in is not there now; recreate it, then undo again`);
    throw err;
  }
}

/** Runs `use` on an entry's old place and destination, pinned without following a final link and checked to be the paths the move named. */
async function withEntry<T>(deps: RestoreManyDeps, t: UndoManyTarget, e: Entry, use: (from: Pinned, to: Pinned) => Promise<T>): Promise<T> {
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
function placeOf(e: Entry, from: Pinned, to: Pinned, strict = false): Place {
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

function problemsText(problems: readonly string[]): string {
  const shown = problems.slice(0, 3).join('; ');
  return problems.length > 3 ? `${shown} (and ${problems.length - 3} more)` : shown;
}

/** The `undoing` mark of a record: held open and touched while entries go back. */
interface UndoingMark {
  touch(): void;
  done(): Promise<void>;
}

/** How long ago the record's mark was last touched; undefined when there is none. */
async function markAge(record: UndoRecord, now: number): Promise<number | undefined> {
  const seen = await inCallFolder(record.root, record.nonce, async (own) => lstat(procPath(own, UNDOING_NAME)).catch(() => undefined));
  return seen === undefined ? undefined : now - seen.mtimeMs;
}

/** Takes the mark: a new one, or one an undo killed part way left untouched; refused while another undo touches it. */
async function takeMark(record: UndoRecord, t: UndoManyTarget, now: number): Promise<UndoingMark> {
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

export function createRestoreMany(deps: RestoreManyDeps) {
  const treeOptions = { ...(deps.treeLimits !== undefined ? { treeLimits: deps.treeLimits } : {}), ...(deps.hashLimitBytes !== undefined ? { hashLimitBytes: deps.hashLimitBytes } : {}) };

  /** Where each moved entry is now, in the call's order. */
  async function places(t: UndoManyTarget, change: ChangeOf<'moved_many'>): Promise<Place[]> {
    const out: Place[] = [];
    for (const e of change.entries) {
      try {
        out.push(await withEntry(deps, t, e, async (from, to) => placeOf(e, from, to, true)));
      } catch (err) {
        if (!(err instanceof ToolRefusal)) throw err;
        out.push({ kind: 'problem', why: err.message });
      }
    }
    return out;
  }

  /** Refuses, having moved nothing, unless every entry is back or still the very entry the move left (inode, mode, content or tree). */
  async function check(record: UndoRecord, t: UndoManyTarget, change: ChangeOf<'moved_many'>): Promise<void> {
    const problems: string[] = [];
    for (const e of change.entries) {
      try {
        const why = await withEntry(deps, t, e, async (from, to) => {
          const place = placeOf(e, from, to);
          if (place.kind === 'problem') return place.why;
          if (place.kind !== 'moved') return undefined;
          const changed = changedSince({ ...record, held: e.held }, await observePinned(to, { follow: false, deep: true, ...treeOptions }));
          return changed === undefined ? undefined : `${to.path} changed after the move (${changed})`;
        });
        if (why !== undefined) problems.push(why);
      } catch (err) {
        if (!(err instanceof ToolRefusal)) throw err;
        problems.push(err.message);
      }
    }
    if (problems.length > 0) throw new ToolRefusal(`nothing was moved back: ${problemsText(problems)}`);
  }

  /** Moves every entry not back yet back, in order, touching the mark; stops at the first that cannot go, saying how far it got. */
  async function moveAllBack(t: UndoManyTarget, change: ChangeOf<'moved_many'>, mark: UndoingMark, strict: boolean): Promise<{ moved: number; already: number }> {
    let moved = 0;
    let already = 0;
    for (const e of change.entries) {
      try {
        await withEntry(deps, t, e, async (from, to) => {
          const place = placeOf(e, from, to, strict);
          if (place.kind === 'problem') throw new ToolRefusal(place.why);
          if (place.kind === 'back') already++;
          else {
            await deps.midUndo?.(moved + already);
            // A file under both names (an undo cut between its link and its unlink): its destination name goes.
            if (place.kind === 'half') await unlink(to.entryPath());
            else await entryBack(to, from, { dev: e.held.dev ?? -1, ino: e.held.ino ?? -1 }, e.held.type === 'directory');
            moved++;
          }
        });
      } catch (err) {
        if (!(err instanceof ToolRefusal)) throw err;
        throw new ToolRefusal(
          moved === 0
            ? `nothing was moved back: ${err.message}`
            : `moved ${entries(moved)} of ${change.entries.length} back${already > 0 ? ` (${already} ${already === 1 ? 'was' : 'were'} back already)` : ''}, then stopped: ${err.message}; the rest stay where the move put them (undo again to move them back)`,
        );
      }
      mark.touch();
    }
    return { moved, already };
  }

  /**
   * Every entry back: true. Some still moved and a mark an undo killed part
   * way left untouched: the rest are moved back (each checked to be the
   * moved entry), then true. False otherwise; refused while another undo
   * is moving them.
   */
  async function back(record: UndoRecord, t: UndoManyTarget, change: ChangeOf<'moved_many'>): Promise<{ moved: number; already: number } | false> {
    const now = await places(t, change);
    if (now.some((p) => p.kind === 'problem')) return false;
    // Entries still moved go back here only for an undo that began (its mark): a new undo checks them all first.
    if (now.some((p) => p.kind === 'moved') && (await markAge(record, deps.now())) === undefined) return false;
    const mark = await takeMark(record, t, deps.now());
    try {
      return await moveAllBack(t, change, mark, true);
    } finally {
      await mark.done();
    }
  }

  /** Marks the record restored and clears its call's folder; false when another undo or the purge settled it first. */
  async function settle(record: UndoRecord): Promise<boolean> {
    const settled = (await deps.records?.settleUndo(record.nonce, 'restored')) === true;
    await clearCallFolder(record.root, record.nonce, [UNDOING_NAME]);
    return settled;
  }

  async function undoable(t: UndoManyTarget): Promise<Undoable> {
    return refusing(async () => {
      const record = await recordOf(deps.records, t);
      stillHeld(record, t, deps.now());
      const change = manyOf(deps, record, t);
      await check(record, t, change);
      return { ok: true as const, type: 'set' as const, bytes: record.held.bytes, files: record.held.files, entries: change.entries.length, heldAt: record.heldAt, expiresAt: record.expiresAt };
    });
  }

  async function restore(t: UndoManyTarget): Promise<ToolOutcome> {
    const answer = await refusing(async (): Promise<ToolOutcome> => {
      const record = await recordOf(deps.records, t);
      const change = manyOf(deps, record, t);
      const finished = record.state === 'held' ? await back(record, t, change) : false;
      if (finished !== false) {
        const how = finished.moved === 0 ? 'put back before this undo moved any' : `${finished.moved} of them moved back now, finishing an undo that was cut short`;
        if (await settle(record)) return { ok: true, output: `the ${entries(change.entries.length)} ${callOf(t)} moved are back where they were (${how})${notMoved(change)}` };
        return { ok: false, output: `Refused: another undo of ${callOf(t)} moved them back at the same time` };
      }
      stillHeld(record, t, deps.now());
      await check(record, t, change);
      const mark = await takeMark(record, t, deps.now());
      let done: { moved: number; already: number };
      try {
        done = await moveAllBack(t, change, mark, false);
      } finally {
        await mark.done();
      }
      const text = `moved ${entries(done.moved)} back to where ${callOf(t)} moved them from${done.already > 0 ? ` (${done.already} ${done.already === 1 ? 'was' : 'were'} back already)` : ''}${notMoved(change)}`;
      if (await settle(record)) return { ok: true, output: text };
      const settledBy = await deps.records?.undoRecord(record.nonce);
      if (settledBy?.state === 'restored') return { ok: false, output: `Refused: another undo of ${callOf(t)} moved them back at the same time` };
      return { ok: true, output: `${text} (its undo time ended as they were moved back)` };
    });
    return 'reason' in answer ? { ok: false, output: `Refused: ${answer.reason}` } : answer;
  }

  async function restored(t: UndoManyTarget): Promise<{ present: boolean; detail: string }> {
    const answer = await refusing(async () => {
      const record = await recordOf(deps.records, t);
      const change = manyOf(deps, record, t);
      if (record.state === 'restored') return { present: true, detail: `the entries ${callOf(t)} moved were moved back` };
      if (record.state !== 'held' || (await back(record, t, change)) === false) return { present: false, detail: `the entries ${callOf(t)} moved are not all back` };
      await settle(record);
      return { present: true, detail: `the ${entries(change.entries.length)} ${callOf(t)} moved are back where they were` };
    });
    return 'reason' in answer ? { present: false, detail: answer.reason } : answer;
  }

  return { undoable, restore, restored };
}
