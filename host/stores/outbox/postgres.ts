import type { Notice } from '../../../core/reviewer/notice';
import { SERVER_NOW_MS as NOW_MS, type Database } from '../database/postgres';
import { dueRow, readNotice, stateRow, type Delivery, type NotificationOutbox, type OutboxRow } from './store';


/**
 * The outbox every agent worker of a deployment shares: the table
 * `airlock_deliveries` of the database. Whichever worker is running
 * delivers what any worker enqueued, and the rows of a worker that died
 * mid-attempt are taken over once their lease runs out. A claim is one
 * statement that skips rows another worker is claiming at the same moment
 * (`FOR UPDATE SKIP LOCKED`), so no row is leased twice.
 */
export class PostgresNotificationOutbox implements NotificationOutbox {
  readonly where: string;

  constructor(private readonly db: Database) {
    this.where = `${db.target} (table airlock_deliveries)`;
  }

  async enqueue(notices: readonly Notice[], endpointIds: readonly string[]): Promise<number> {
    const events: string[] = [];
    const endpoints: string[] = [];
    const bodies: string[] = [];
    for (const notice of notices) {
      const json = JSON.stringify(notice);
      for (const endpointId of endpointIds) {
        events.push(notice.eventId);
        endpoints.push(endpointId);
        bodies.push(json);
      }
    }
    if (events.length === 0) return 0;
    const result = await this.db.query({
      name: 'airlock-outbox-enqueue',
      text: `INSERT INTO airlock_deliveries (event_id, endpoint_id, notice, next_at, created_at)
             SELECT e, p, n, ${NOW_MS}, ${NOW_MS} FROM unnest($1::text[], $2::text[], $3::text[]) AS t(e, p, n)
             ON CONFLICT (event_id, endpoint_id) DO NOTHING`,
      values: [events, endpoints, bodies],
    });
    return result.rowCount ?? 0;
  }

  async claim(endpointId: string, leaseMs: number, limit: number): Promise<Delivery[]> {
    if (limit <= 0) return [];
    const result = await this.db.query({
      name: 'airlock-outbox-claim',
      text: `UPDATE airlock_deliveries d SET lease_until = ${NOW_MS} + $2, attempts = d.attempts + 1
             FROM (SELECT event_id, endpoint_id FROM airlock_deliveries
                   WHERE state = 'pending' AND endpoint_id = $1 AND next_at <= ${NOW_MS} AND lease_until <= ${NOW_MS}
                   ORDER BY next_at LIMIT $3 FOR UPDATE SKIP LOCKED) due
             WHERE d.event_id = due.event_id AND d.endpoint_id = due.endpoint_id
             RETURNING d.event_id, d.endpoint_id, d.notice, d.attempts`,
      values: [endpointId, leaseMs, limit],
    });
    const deliveries: Delivery[] = [];
    for (const raw of result.rows) {
      const row = dueRow.parse(raw);
      const notice = readNotice(row.notice);
      if (notice === undefined) {
        // Written by another build in another shape: nothing can be sent.
        await this.finish(row.event_id, row.endpoint_id, 'failed', 'unreadable notice');
        continue;
      }
      // The attempt this lease is for, already counted.
      deliveries.push({ eventId: row.event_id, endpointId: row.endpoint_id, notice, attempts: row.attempts });
    }
    return deliveries;
  }

  async delivered(d: Delivery): Promise<void> {
    await this.finish(d.eventId, d.endpointId, 'delivered', null);
  }

  async retryIn(d: Delivery, delayMs: number, error: string): Promise<void> {
    await this.db.query({
      name: 'airlock-outbox-retry',
      text: `UPDATE airlock_deliveries SET next_at = ${NOW_MS} + $3, lease_until = 0, last_error = $4 WHERE event_id = $1 AND endpoint_id = $2`,
      values: [d.eventId, d.endpointId, Math.round(delayMs), error],
    });
  }

  async released(d: Delivery): Promise<void> {
    await this.db.query({
      name: 'airlock-outbox-release',
      text: `UPDATE airlock_deliveries SET lease_until = 0, attempts = GREATEST(attempts - 1, 0) WHERE event_id = $1 AND endpoint_id = $2`,
      values: [d.eventId, d.endpointId],
    });
  }

  async failed(d: Delivery, error: string): Promise<void> {
    await this.finish(d.eventId, d.endpointId, 'failed', error);
  }

  async nextDueIn(endpointIds: readonly string[]): Promise<number | undefined> {
    if (endpointIds.length === 0) return undefined;
    const result = await this.db.query<{ due: string | null }>({
      name: 'airlock-outbox-next',
      text: `SELECT MIN(GREATEST(next_at, lease_until)) - ${NOW_MS} AS due FROM airlock_deliveries WHERE state = 'pending' AND endpoint_id = ANY($1::text[])`,
      values: [endpointIds],
    });
    const due = result.rows[0]?.due;
    return due === null || due === undefined ? undefined : Number(due);
  }

  async prune(keepMs: number, endpointIds: readonly string[]): Promise<number> {
    const result = await this.db.query({
      name: 'airlock-outbox-prune',
      text: `DELETE FROM airlock_deliveries
             WHERE (state != 'pending' AND done_at < ${NOW_MS} - $1)
                OR (state = 'pending' AND created_at < ${NOW_MS} - $1 AND NOT (endpoint_id = ANY($2::text[])))`,
      values: [keepMs, endpointIds],
    });
    return result.rowCount ?? 0;
  }

  async rows(): Promise<OutboxRow[]> {
    const result = await this.db.query(`SELECT event_id, endpoint_id, state, attempts, last_error FROM airlock_deliveries ORDER BY created_at, event_id, endpoint_id`);
    return result.rows.map((raw) => {
      const r = stateRow.parse(raw);
      return { eventId: r.event_id, endpointId: r.endpoint_id, state: r.state, attempts: r.attempts, lastError: r.last_error };
    });
  }

  /** The database is the deployment's; whoever opened it closes it. */
  async close(): Promise<void> {}

  private async finish(eventId: string, endpointId: string, state: 'delivered' | 'failed', error: string | null): Promise<void> {
    await this.db.query({
      name: 'airlock-outbox-finish',
      text: `UPDATE airlock_deliveries SET state = $3, lease_until = 0, last_error = $4, done_at = ${NOW_MS} WHERE event_id = $1 AND endpoint_id = $2`,
      values: [eventId, endpointId, state, error],
    });
  }
}
