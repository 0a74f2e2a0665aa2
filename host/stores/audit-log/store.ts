import type { AuditEvent } from '../../../core/audit/events';

/**
 * Where sanitized audit events go. `write` either stores every event of
 * the batch or fails, leaving none of them (never a part of one).
 */
export interface AuditSink {
  write(events: readonly AuditEvent[]): Promise<void>;
  /**
   * Writing a batch again stores each of its events once (the store is
   * keyed by event id), so a retried write may simply write again. A sink
   * that appends (the JSONL file) is not: a retry there could write twice.
   */
  readonly idempotent: boolean;
  /** Removes events older than this; how many. */
  prune(olderThanMs: number): Promise<number>;
}
