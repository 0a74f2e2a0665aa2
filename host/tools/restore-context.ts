import { ToolRefusal } from '../../core/tools/tool-refusal';
import type { UndoOneTarget, UndoTarget } from '../../core/tools/undo';
import type { UndoRecord, UndoRecords } from '../stores/nonces/undo-records';
import type { Pinned } from '../fs/pinned-path';
import type { TreeLimits } from './tree';

/**
 * What every kind of undo is given (see restore.ts): the record, the path
 * the change acted on and the entry the change kept, each pinned without
 * following a link.
 */
export interface UndoContext {
  readonly record: UndoRecord;
  readonly t: UndoOneTarget;
  /** The call's path, checked to be the one the change named. */
  readonly target: Pinned;
  /** The entry kept in the call's holding folder; null when it is not there. */
  readonly held: Pinned | null;
  /** A move's destination (where the entry is now), checked to be the one the move named; null for other changes. */
  readonly other: Pinned | null;
  readonly treeLimits?: TreeLimits;
  readonly hashLimitBytes?: number;
}

/** How one kind of change is taken back. */
export interface ChangeUndo {
  /** The path is already as it was before the change (an earlier undo, cut short, put it back): finished here, with no more than what that undo left to do. */
  back(): Promise<boolean>;
  /** Throws a ToolRefusal saying what changed since, when the change cannot be taken back now. */
  check(): Promise<void>;
  /** Takes the change back (after `check`); what was done, in words. */
  undo(): Promise<string>;
}

/** The record's change (records before other changes only moved entries aside). */
export type RecordChange = NonNullable<UndoRecord['change']>;
export type ChangeOf<K extends RecordChange['kind']> = Extract<RecordChange, { kind: K }>;
export const changeOf = (record: UndoRecord): RecordChange => record.change ?? { kind: 'moved_aside' };

/** Refusal text: the call of the job, as a reviewer names it. */
export const callOf = (t: Pick<UndoTarget, 'job' | 'call'>) => `call ${t.call} of job ${t.job}`;

/** The record of the call's change; refused when there is none. */
export async function recordOf(records: UndoRecords | undefined, t: UndoTarget): Promise<UndoRecord> {
  if (records === undefined) throw new ToolRefusal('this tools worker keeps no undo records');
  const record = await records.undoRecordOfCall(t.job, t.call);
  if (record === undefined) throw new ToolRefusal(`${callOf(t)} kept nothing for undo (it was not a reversible change, or its record was forgotten after its undo time)`);
  return record;
}

/** Why a record can no longer be undone: settled, or past its undo time. */
export function stillHeld(record: UndoRecord, t: UndoTarget, now: number): void {
  if (record.state === 'restored') throw new ToolRefusal(`${callOf(t)} was already undone${record.settledAt !== undefined ? ` (${record.settledAt})` : ''}`);
  if (record.state === 'purged' || Date.parse(record.expiresAt) <= now) throw new ToolRefusal(`the undo time of ${callOf(t)} ended on ${record.expiresAt}; what it changed cannot be put back`);
}

/** Runs `run`, answering a ToolRefusal it throws as `{ ok: false, reason }`. */
export async function refusing<T>(run: () => Promise<T>): Promise<T | { ok: false; reason: string }> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof ToolRefusal) return { ok: false, reason: err.message };
    throw err;
  }
}

/** Same file: device, inode and (where the file system keeps one) birth time, since an inode number is given again once a file is removed. */
export function sameFile(stats: { readonly dev: number; readonly ino: number; readonly birthtimeMs: number } | null, kept: { readonly dev: number; readonly ino: number; readonly born?: number | undefined }): boolean {
  return stats !== null && stats.dev === kept.dev && stats.ino === kept.ino && (kept.born === undefined || stats.birthtimeMs === kept.born);
}

/**
 * Why a file's names (hard links) are not those the change left it with:
 * a name made since may lie anywhere on its file system, outside the roots
 * too, and an undo through this name would change the file under that one
 * as well. Undefined while the count is the same (folders are not counted).
 */
export function namesChanged(stats: { readonly nlink: number; isDirectory(): boolean } | null, links: number | undefined): string | undefined {
  if (stats === null || stats.isDirectory()) return undefined;
  const then = links ?? 1;
  if (stats.nlink === then) return undefined;
  return `it has ${stats.nlink} ${stats.nlink === 1 ? 'name' : 'names'} (hard links) now and had ${then} when the change left it: a name was ${stats.nlink > then ? 'made' : 'removed'} since, possibly outside the allowed folders`;
}
