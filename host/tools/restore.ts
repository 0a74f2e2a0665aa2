import type { ToolOutcome } from '../../core/tools/outcome';
import { ToolRefusal } from '../../core/tools/tool-refusal';
import { isUndoMany, type Undoable, type UndoOneTarget, type UndoTarget } from '../../core/tools/undo';
import { pathDigest } from '../stores/nonces/store';
import type { UndoRecord, UndoRecords } from '../stores/nonces/undo-records';
import type { Roots } from '../fs/roots';
import { BEFORE_NAME, clearCallFolder, HELD_NAME, openCallFolder, openHolding, REPLACED_NAME, UNDOING_NAME } from './call-folder';
import { ErrnoError, errnoCode, fstatFd, O_NOFOLLOW, O_PATH, openFd, procPath, release } from '../fs/descriptors';
import { HOLDING_FOLDER } from '../../core/tools/fs/holding-folder';
import { Pinned, pin } from '../fs/pinned-path';
import { callOf, changeOf, recordOf, refusing, stillHeld, type ChangeUndo, type RecordChange, type UndoContext } from './restore-context';
import { createRestoreMany } from './restore-many';
import { entryUndo } from './restore-entry';
import { modeUndo } from './restore-mode';
import { movedUndo } from './restore-move';
import { appendedUndo, replacedUndo } from './restore-write';
import type { TreeLimits } from './tree';

/**
 * `fs_undo`'s hands: takes an approved reversible change back, only when
 * its record is still held and in its undo time, the path names what the
 * change named (its digest matches), and the path and what was kept are
 * still as the change left them (each kind says how: restore-entry.ts,
 * restore-mode.ts, restore-write.ts, restore-move.ts). The record is marked restored after;
 * a kill in between leaves the change taken back and the record held,
 * which `restore` and `restored` recognise and finish.
 */

export interface RestoreDeps {
  readonly roots: Roots;
  readonly records: UndoRecords | undefined;
  readonly treeLimits?: TreeLimits;
  readonly hashLimitBytes?: number;
  readonly now?: () => number;
  /** TEST ONLY: called before each entry a bulk move's undo moves back. */
  readonly midUndo?: (back: number) => Promise<void>;
}

/** The call's path, pinned without following a final link, checked to be the path the change named. */
function pinTarget(deps: RestoreDeps, record: UndoRecord, t: UndoOneTarget): Pinned {
  let target: Pinned;
  try {
    target = pin(deps.roots, t.path, { follow: false });
  } catch (err) {
    if (err instanceof ErrnoError && (err.code === 'ENOENT' || err.code === 'ENOTDIR')) {
      throw new ToolRefusal(`the folder ${t.path} was in is not there now; recreate it (or undo its own delete first), then undo again`);
    }
    throw err;
  }
  if (target.root !== record.root || pathDigest(target.path) !== record.pathDigest) {
    target.close();
    throw new ToolRefusal(`${t.path} is not the path ${callOf(t)} changed; name that path`);
  }
  return target;
}

/** A move's destination as the undo names it, pinned without following a final link, checked to be the one the move named; null for other changes. */
function pinDestination(deps: RestoreDeps, record: UndoRecord, t: UndoOneTarget): Pinned | null {
  const change = changeOf(record);
  if (change.kind !== 'moved' || t.to === undefined) return null;
  let to: Pinned;
  try {
    to = pin(deps.roots, t.to, { follow: false });
  } catch (err) {
    if (err instanceof ErrnoError && (err.code === 'ENOENT' || err.code === 'ENOTDIR')) throw new ToolRefusal(`the folder ${t.to} was in is not there now; nothing was moved back`);
    throw err;
  }
  if (pathDigest(to.path) !== change.to) {
    to.close();
    throw new ToolRefusal(`${t.to} is not where ${callOf(t)} moved the entry; name that path`);
  }
  return to;
}

/** The name of what a change kept in its call's folder; undefined for a change that keeps no entry. */
function keptName(change: RecordChange): string | undefined {
  if (change.kind === 'moved_aside') return HELD_NAME;
  if (change.kind === 'replaced') return BEFORE_NAME;
  if (change.kind === 'moved' && change.replaced !== undefined) return REPLACED_NAME;
  return undefined;
}

/** The kept entry, pinned in its call's folder without following links; null when it is not there. */
function pinKept(record: UndoRecord): Pinned | null {
  const name = keptName(changeOf(record));
  if (name === undefined) return null;
  const holding = openHolding(record.root);
  if (holding === undefined) return null;
  let folder: number | undefined;
  try {
    folder = openCallFolder(holding, record.nonce);
    const fd = openFd(procPath(folder, name), O_PATH | O_NOFOLLOW);
    const pinned = new Pinned(record.root, `${record.root}/${HOLDING_FOLDER}/${record.nonce}/${name}`, folder, name, fd, fstatFd(fd), false);
    folder = undefined;
    return pinned;
  } catch (err) {
    if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') return null;
    throw err;
  } finally {
    release(folder ?? null);
    release(holding);
  }
}

function undoOf(c: UndoContext): ChangeUndo {
  const change = changeOf(c.record);
  switch (change.kind) {
    case 'moved_aside':
      return entryUndo(c, () => pinKept(c.record));
    case 'mode':
      return modeUndo(c, change);
    case 'replaced':
      return replacedUndo(c, change);
    case 'appended':
      return appendedUndo(c, change);
    case 'moved':
      return movedUndo(c, change);
    case 'moved_many':
      // Named by its list of moves, never by one path (restore-many.ts).
      throw new ToolRefusal(`${callOf(c.t)} was a bulk move: name its moves to undo it`);
  }
}

export function createRestore(deps: RestoreDeps) {
  const now = deps.now ?? Date.now;

  /** Runs `use` on the record's undo, over the pinned path and kept entry, closing both after. */
  async function withUndo<T>(t: UndoOneTarget, use: (record: UndoRecord, undo: ChangeUndo, c: UndoContext) => Promise<T>): Promise<T> {
    const record = await recordOf(deps.records, t);
    const target = pinTarget(deps, record, t);
    let other: Pinned | null = null;
    let held: Pinned | null = null;
    try {
      other = pinDestination(deps, record, t);
      held = pinKept(record);
      const c: UndoContext = { record, t, target, held, other, ...(deps.treeLimits !== undefined ? { treeLimits: deps.treeLimits } : {}), ...(deps.hashLimitBytes !== undefined ? { hashLimitBytes: deps.hashLimitBytes } : {}) };
      return await use(record, undoOf(c), c);
    } finally {
      held?.close();
      other?.close();
      target.close();
    }
  }

  /** Marks the record restored and clears its call's folder (an overwrite's copy with it); false when a purge settled it first (the change is taken back all the same). */
  async function settle(record: UndoRecord): Promise<boolean> {
    const settled = (await deps.records?.settleUndo(record.nonce, 'restored')) === true;
    await clearCallFolder(record.root, record.nonce, changeOf(record).kind === 'replaced' ? [BEFORE_NAME, UNDOING_NAME] : []);
    return settled;
  }

  async function undoable(t: UndoOneTarget): Promise<Undoable> {
    return refusing(() =>
      withUndo(t, async (record, undo) => {
        stillHeld(record, t, now());
        await undo.check();
        return { ok: true as const, type: record.held.type, bytes: record.held.bytes, files: record.held.files, heldAt: record.heldAt, expiresAt: record.expiresAt };
      }),
    );
  }

  async function restore(t: UndoOneTarget): Promise<ToolOutcome> {
    try {
      return await withUndo(t, async (record, undo, c) => {
        if (record.state === 'held' && (await undo.back())) {
          await settle(record);
          return { ok: true, output: `${c.target.path} is back as it was before ${callOf(t)} (an earlier attempt had put it back)` };
        }
        stillHeld(record, t, now());
        await undo.check();
        const done = await undo.undo();
        if (await settle(record)) return { ok: true, output: done };
        // Settled by someone else meanwhile: another undo of the same call (whose answer is the one that counts), or the purge at its time's end.
        const settledBy = await deps.records?.undoRecord(record.nonce);
        if (settledBy?.state === 'restored') return { ok: false, output: `Refused: another undo of ${callOf(t)} put it back at the same time` };
        return { ok: true, output: `${done} (its undo time ended as it was put back)` };
      });
    } catch (err) {
      if (err instanceof ToolRefusal) return { ok: false, output: `Refused: ${err.message}` };
      throw err;
    }
  }

  async function restored(t: UndoOneTarget, options: { readonly pathWasFree: boolean }): Promise<{ present: boolean; detail: string }> {
    const answer = await refusing(() =>
      withUndo(t, async (record, undo, c) => {
        // A delete's or a move's undo with something at the path before it could only have been refused.
        const kind = changeOf(record).kind;
        if ((kind === 'moved_aside' || kind === 'moved') && !options.pathWasFree) return { present: false, detail: `${t.path} existed before the undo` };
        if (record.state === 'restored') return { present: true, detail: `${t.path} was put back` };
        if (record.state !== 'held' || !(await undo.back())) return { present: false, detail: `${t.path} is not back as it was before ${callOf(t)}` };
        await settle(record);
        return { present: true, detail: `${c.target.path} is back as it was before ${callOf(t)}` };
      }),
    );
    return 'reason' in answer ? { present: false, detail: answer.reason } : answer;
  }

  const many = createRestoreMany({ ...deps, now });
  return {
    undoable: (t: UndoTarget) => (isUndoMany(t) ? many.undoable(t) : undoable(t)),
    restore: (t: UndoTarget) => (isUndoMany(t) ? many.restore(t) : restore(t)),
    restored: (t: UndoTarget, options: { readonly pathWasFree: boolean }) => (isUndoMany(t) ? many.restored(t) : restored(t, options)),
  };
}
