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

const dueRow = z.object({ event_id: z.string(), endpoint_id: z.string(), notice: z.string(), attempts: z.number() });
const stateRow = z.object({ event_id: z.string(), endpoint_id: z.string(), state: z.string(), attempts: z.number(), last_error: z.string().nullable() });
const dueAt = z.object({ due: z.number().nullable() }).optional();

/**
 * The notifications a worker still owes, in a SQLite file of the data
 * folder: one row per event and endpoint, written when the event's audit
 * write succeeds and kept after delivery (for a while) so the same event
 * written again (a retried audit write) is not notified twice. A row is
 * leased while an attempt runs; a worker that dies mid-attempt leaves a
 * lease that runs out, and the row is tried again.
 */
export class NotificationOutbox {
  private readonly db: Database.Database;

  constructor(readonly file: string) {
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

  /** Adds each notice for each endpoint; one already known (by event and endpoint) is left as it is. Returns how many were new. */
  enqueue(notices: readonly Notice[], endpointIds: readonly string[], now: number): number {
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

  /** Up to `limit` due rows of one endpoint, leased until `now + leaseMs`, their attempt counted. */
  claim(endpointId: string, now: number, leaseMs: number, limit: number): Delivery[] {
    if (limit <= 0) return [];
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

  delivered(d: Delivery, now: number): void {
    this.db.prepare(`UPDATE deliveries SET state = 'delivered', lease_until = 0, last_error = NULL, done_at = ? WHERE event_id = ? AND endpoint_id = ?`).run(now, d.eventId, d.endpointId);
  }

  retryAt(d: Delivery, at: number, error: string): void {
    this.db.prepare(`UPDATE deliveries SET next_at = ?, lease_until = 0, last_error = ? WHERE event_id = ? AND endpoint_id = ?`).run(at, error, d.eventId, d.endpointId);
  }

  /** An attempt that the worker's own shutdown cut short: not counted, due again at once. */
  released(d: Delivery): void {
    this.db.prepare(`UPDATE deliveries SET lease_until = 0, attempts = MAX(attempts - 1, 0) WHERE event_id = ? AND endpoint_id = ?`).run(d.eventId, d.endpointId);
  }

  failed(d: Delivery, error: string, now: number): void {
    this.db.prepare(`UPDATE deliveries SET state = 'failed', lease_until = 0, last_error = ?, done_at = ? WHERE event_id = ? AND endpoint_id = ?`).run(error, now, d.eventId, d.endpointId);
  }

  /** When the next row of these endpoints is due (its backoff over and its lease run out); undefined when none waits. */
  nextDue(endpointIds: readonly string[]): number | undefined {
    if (endpointIds.length === 0) return undefined;
    const row = this.db
      .prepare(`SELECT MIN(MAX(next_at, lease_until)) AS due FROM deliveries WHERE state = 'pending' AND endpoint_id IN (${endpointIds.map(() => '?').join(',')})`)
      .get(...endpointIds);
    return dueAt.parse(row)?.due ?? undefined;
  }

  /** Forgets finished rows, and rows of endpoints no longer configured, older than `before`. */
  prune(before: number, endpointIds: readonly string[]): number {
    const finished = this.db.prepare(`DELETE FROM deliveries WHERE state != 'pending' AND done_at < ?`).run(before).changes;
    const placeholders = endpointIds.map(() => '?').join(',');
    const orphaned = this.db
      .prepare(`DELETE FROM deliveries WHERE state = 'pending' AND created_at < ?${endpointIds.length > 0 ? ` AND endpoint_id NOT IN (${placeholders})` : ''}`)
      .run(before, ...endpointIds).changes;
    return finished + orphaned;
  }

  /** Every row's state, for tests and diagnostics. */
  rows(): Array<{ eventId: string; endpointId: string; state: string; attempts: number; lastError: string | null }> {
    return this.db
      .prepare(`SELECT event_id, endpoint_id, state, attempts, last_error FROM deliveries ORDER BY created_at`)
      .all()
      .map((raw) => {
        const r = stateRow.parse(raw);
        return { eventId: r.event_id, endpointId: r.endpoint_id, state: r.state, attempts: r.attempts, lastError: r.last_error };
      });
  }

  close(): void {
    this.db.close();
  }
}

function readNotice(json: string): Notice | undefined {
  try {
    const parsed = noticeSchema.safeParse(JSON.parse(json));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}
