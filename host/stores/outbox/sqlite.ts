import type Database from 'better-sqlite3';
import { z } from 'zod';
import type { Notice } from '../../../core/reviewer/notice';
import { openSqlite } from '../database/sqlite';
import { type Delivery, type NotificationOutbox, type OutboxRow, dueRow, readNotice, stateRow } from './store';

const dueAt = z.object({ due: z.number().nullable() }).optional();

/** The embedded outbox: a SQLite file in one agent worker's data folder. */
export class SqliteNotificationOutbox implements NotificationOutbox {
  private readonly db: Database.Database;
  readonly where: string;

  constructor(
    readonly file: string,
    private readonly now: () => number = Date.now,
  ) {
    this.where = file;
    this.db = openSqlite(file);
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
