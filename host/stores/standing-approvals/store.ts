import { z } from 'zod';
import { standingRecordSchema, type StandingRecord, type StandingUse, type StandingView } from '../../../core/approval/standing';

/**
 * Standing approvals and their uses, shared by every agent worker (a data
 * folder's SQLite file, or the shared database). A use is taken like a
 * nonce: once per key (the job and request using it), never more than
 * the approval's count, in one transaction, so ten workers asking at once
 * for an approval with three uses left get exactly three.
 */
export interface StandingApprovals {
  /** Stores a standing approval; the same id again changes nothing (a retried write). */
  put(record: StandingRecord): Promise<void>;
  /** Those not revoked and not past their end at `now`, for this tool and requester (uses left or not). */
  candidates(query: { readonly toolName: string; readonly requester: string; readonly now: number }): Promise<StandingView[]>;
  /**
   * Takes one use for `useKey`. The same key again answers the use it
   * took (a retried activity); a revoked, expired or spent approval gives
   * none.
   */
  use(id: string, useKey: string, now: number): Promise<StandingUse>;
  /** Revokes it for every call from now on; `already` when it was revoked before. */
  revoke(id: string, by: string, reason: string, now: number): Promise<'revoked' | 'already' | 'unknown'>;
  get(id: string): Promise<StandingView | undefined>;
  /** Newest first; `all` includes revoked, expired and spent ones. */
  list(options: { readonly all: boolean; readonly now: number }): Promise<StandingView[]>;
  /** Its uses in order: which job's request took each, and when. */
  usesOf(id: string): Promise<StandingUseRow[]>;
  close(): Promise<void>;
}

export interface StandingUseRow {
  readonly use: number;
  readonly useKey: string;
  readonly at: number;
}

/** A use key names the job and request that took a use. */
export function useKey(jobId: string, requestId: string): string {
  return `${jobId}/${requestId}`;
}

const storedRowSchema = z.object({
  record: z.string(),
  used: z.coerce.number(),
  revoked_at: z.coerce.number().nullable(),
  revoked_by: z.string().nullable(),
  revoked_reason: z.string().nullable(),
});

/** A stored row as a view; a row that no longer parses is left out of what a use may match. */
export function viewOf(row: unknown): StandingView | undefined {
  const r = storedRowSchema.safeParse(row);
  if (!r.success) return undefined;
  const record = standingRecordSchema.safeParse(JSON.parse(r.data.record));
  if (!record.success) return undefined;
  return {
    record: record.data,
    used: r.data.used,
    revoked: r.data.revoked_at === null ? null : { at: r.data.revoked_at, by: r.data.revoked_by ?? '', reason: r.data.revoked_reason ?? '' },
  };
}

/** Whether a use may still be taken: not revoked, not past its end, uses left. */
export function useRefusal(view: StandingView, now: number): Extract<StandingUse, { ok: false }>['why'] | undefined {
  if (view.revoked !== null) return 'revoked';
  if (now >= view.record.until) return 'expired';
  if (view.used >= view.record.uses) return 'used_up';
  return undefined;
}
