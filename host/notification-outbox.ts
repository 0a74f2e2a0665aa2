import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { z } from 'zod';
import { noticeSchema, type Notice } from '../core/reviewer/notification';

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
const dueAt = z.object({ due: z.number().nullable() }).optional();

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

/** The embedded outbox: a SQLite file in one agent worker's data folder. */
export class SqliteNotificationOutbox implements NotificationOutbox {
  private readonly db: Database.Database;
  readonly where: string;

  constructor(
    readonly file: string,
    private readonly now: () => number = Date.now,
  ) {
    this.where = file;
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS deliveries (
        event_id TEXT NOT NULL,
        endpoint_id TEXT NOT NULL,
        notice TEXT NOT NULL,
        state TEXT NOT NULL DEFAULT 'pending',
        attempts INTEGER NOT NULL DEFAULT 0,
        next_at INTEGER NOT NULL,
        lease_until INTEGER NOT NULL DEFAULT 0,
        last_error TEXT,
        created_at INTEGER NOT NULL,
        done_at INTEGER,
        PRIMARY KEY (event_id, endpoint_id)
      );
      CREATE INDEX IF NOT EXISTS deliveries_due ON deliveries (state, endpoint_id, next_at);
    `);
  }

  async enqueue(notices: readonly Notice[], endpointIds: readonly string[]): Promise<number> {
    const now = this.now();
    const insert = this.db.prepare(
      `INSERT OR IGNORE INTO deliveries (event_id, endpoint_id, notice, next_at, created_at) VALUES (?, ?, ?, ?, ?)`,
    );
    let added = 0;
    this.db.transaction(() => {
      for (const notice of notices) {
        const json = JSON.stringify(notice);
        for (const endpointId of endpointIds) added += insert.run(notice.eventId, endpointId, json, now, now).changes;
      }
    })();
    return added;
  }

  async claim(endpointId: string, leaseMs: number, limit: number): Promise<Delivery[]> {
    if (limit <= 0) return [];
    const now = this.now();
    const select = this.db.prepare(
      `SELECT event_id, endpoint_id, notice, attempts FROM deliveries
       WHERE state = 'pending' AND endpoint_id = ? AND next_at <= ? AND lease_until <= ? ORDER BY next_at LIMIT ?`,
    );
    const lease = this.db.prepare(`UPDATE deliveries SET lease_until = ?, attempts = attempts + 1 WHERE event_id = ? AND endpoint_id = ?`);
    const failed = this.db.prepare(`UPDATE deliveries SET state = 'failed', last_error = ?, done_at = ? WHERE event_id = ? AND endpoint_id = ?`);
    return this.db
      .transaction(() =>
        select.all(endpointId, now, now, limit).flatMap((raw) => {
          const row = dueRow.parse(raw);
          const notice = readNotice(row.notice);
          if (notice === undefined) {
            // Written by another build in another shape: nothing can be sent.
            failed.run('unreadable notice', now, row.event_id, row.endpoint_id);
            return [];
          }
          lease.run(now + leaseMs, row.event_id, row.endpoint_id);
          return [{ eventId: row.event_id, endpointId: row.endpoint_id, notice, attempts: row.attempts + 1 }];
        }),
      )
      .immediate();
  }

  async delivered(d: Delivery): Promise<void> {
    this.db.prepare(`UPDATE deliveries SET state = 'delivered', lease_until = 0, last_error = NULL, done_at = ? WHERE event_id = ? AND endpoint_id = ?`).run(this.now(), d.eventId, d.endpointId);
  }

  async retryIn(d: Delivery, delayMs: number, error: string): Promise<void> {
    this.db.prepare(`UPDATE deliveries SET next_at = ?, lease_until = 0, last_error = ? WHERE event_id = ? AND endpoint_id = ?`).run(this.now() + delayMs, error, d.eventId, d.endpointId);
  }

  async released(d: Delivery): Promise<void> {
    this.db.prepare(`UPDATE deliveries SET lease_until = 0, attempts = MAX(attempts - 1, 0) WHERE event_id = ? AND endpoint_id = ?`).run(d.eventId, d.endpointId);
  }

  async failed(d: Delivery, error: string): Promise<void> {
    this.db.prepare(`UPDATE deliveries SET state = 'failed', lease_until = 0, last_error = ?, done_at = ? WHERE event_id = ? AND endpoint_id = ?`).run(error, this.now(), d.eventId, d.endpointId);
  }

  async nextDueIn(endpointIds: readonly string[]): Promise<number | undefined> {
    if (endpointIds.length === 0) return undefined;
    const row = this.db
      .prepare(`SELECT MIN(MAX(next_at, lease_until)) AS due FROM deliveries WHERE state = 'pending' AND endpoint_id IN (${endpointIds.map(() => '?').join(',')})`)
      .get(...endpointIds);
    const due = dueAt.parse(row)?.due ?? undefined;
    return due === undefined ? undefined : due - this.now();
  }

  async prune(keepMs: number, endpointIds: readonly string[]): Promise<number> {
    const before = this.now() - keepMs;
    const finished = this.db.prepare(`DELETE FROM deliveries WHERE state != 'pending' AND done_at < ?`).run(before).changes;
    const placeholders = endpointIds.map(() => '?').join(',');
    const orphaned = this.db
      .prepare(`DELETE FROM deliveries WHERE state = 'pending' AND created_at < ?${endpointIds.length > 0 ? ` AND endpoint_id NOT IN (${placeholders})` : ''}`)
      .run(before, ...endpointIds).changes;
    return finished + orphaned;
  }

  async rows(): Promise<OutboxRow[]> {
    return this.db
      .prepare(`SELECT event_id, endpoint_id, state, attempts, last_error FROM deliveries ORDER BY created_at`)
      .all()
      .map((raw) => {
        const r = stateRow.parse(raw);
        return { eventId: r.event_id, endpointId: r.endpoint_id, state: r.state, attempts: r.attempts, lastError: r.last_error };
      });
  }

  async close(): Promise<void> {
    this.db.close();
  }
}

export function readNotice(json: string): Notice | undefined {
  try {
    const parsed = noticeSchema.safeParse(JSON.parse(json));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
