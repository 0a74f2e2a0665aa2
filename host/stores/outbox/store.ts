import { z } from 'zod';
import { type Notice, noticeSchema } from '../../../core/reviewer/notice';

/** One notice on its way to one endpoint. */
export interface Delivery {
  readonly eventId: string;
  readonly endpointId: string;
  readonly notice: Notice;
  /** Attempts so far, this one included (counted when claimed: an attempt cut short by a crash counts). */
  readonly attempts: number;
}

export const dueRow = z.object({ event_id: z.string(), endpoint_id: z.string(), notice: z.string(), attempts: z.number() });
export const stateRow = z.object({ event_id: z.string(), endpoint_id: z.string(), state: z.string(), attempts: z.number(), last_error: z.string().nullable() });

export interface OutboxRow {
  readonly eventId: string;
  readonly endpointId: string;
  readonly state: string;
  readonly attempts: number;
  readonly lastError: string | null;
}

/**
 * The notifications still owed: one row per event and endpoint, written
 * when the event's audit write succeeds and kept after delivery (for a
 * while) so the same event written again (a retried audit write) is not
 * notified twice. A row is leased while an attempt runs; a worker that
 * dies mid-attempt leaves a lease that runs out, and the row is tried
 * again by whichever worker comes next. Times are the store's own clock:
 * callers give delays, never instants, so machines whose clocks differ
 * share one outbox. The embedded outbox is a SQLite file of one worker's
 * data folder (`SqliteNotificationOutbox`); the shared one is a table of
 * the database (`PostgresNotificationOutbox`), where any agent worker
 * delivers what another enqueued.
 */
export interface NotificationOutbox {
  /** Where the outbox is, for messages. */
  readonly where: string;
  /** Adds each notice for each endpoint; one already known (by event and endpoint) is left as it is. Returns how many were new. */
  enqueue(notices: readonly Notice[], endpointIds: readonly string[]): Promise<number>;
  /** Up to `limit` due rows of one endpoint, leased for `leaseMs`, their attempt counted. */
  claim(endpointId: string, leaseMs: number, limit: number): Promise<Delivery[]>;
  delivered(d: Delivery): Promise<void>;
  /** Due again after `delayMs`, the lease dropped. */
  retryIn(d: Delivery, delayMs: number, error: string): Promise<void>;
  /** An attempt that the worker's own shutdown cut short: not counted, due again at once. */
  released(d: Delivery): Promise<void>;
  failed(d: Delivery, error: string): Promise<void>;
  /** How long until the next row of these endpoints is due (its backoff over and its lease run out); undefined when none waits. */
  nextDueIn(endpointIds: readonly string[]): Promise<number | undefined>;
  /** Forgets finished rows, and rows of endpoints no longer configured, older than `keepMs`. */
  prune(keepMs: number, endpointIds: readonly string[]): Promise<number>;
  /** Every row's state, for tests and diagnostics. */
  rows(): Promise<OutboxRow[]>;
  close(): Promise<void>;
}

export function readNotice(json: string): Notice | undefined {
  try {
    const parsed = noticeSchema.safeParse(JSON.parse(json));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
