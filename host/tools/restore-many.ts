import { unlink } from 'node:fs/promises';
import type { ToolOutcome } from '../../core/tools/outcome';
import { ToolRefusal } from '../../core/tools/tool-refusal';
import type { UndoManyTarget, Undoable } from '../../core/tools/undo';
import type { UndoRecord } from '../stores/nonces/undo-records';
import { UNDOING_NAME, clearCallFolder } from './call-folder';
import { observePinned } from './observe';
import { type ChangeOf, callOf, recordOf, refusing, stillHeld } from './restore-context';
import { changedSince } from './restore-entry';
import { type Place, type RestoreManyDeps, type UndoingMark, entries, manyOf, markAge, notMoved, placeOf, problemsText, takeMark, withEntry } from './restore-many-entries';
import { entryBack } from './restore-move';

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
