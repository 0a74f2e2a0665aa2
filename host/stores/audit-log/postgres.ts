import { auditEventIds, type AuditEvent } from '../../../core/audit/events';
import type { AuditSink } from './store';
import { parseStoredEvent, type AuditFilter, type AuditRead, type AuditReader, type StoredEvent } from './reader';
import type { Database } from '../database/postgres';

/** PostgreSQL's text holds no NUL character; a column that would carry one gets U+FFFD (the event's JSON escapes it anyway). */
const column = (text: string | undefined): string | null => (text === undefined ? null : text.replace(/\0/g, '\uFFFD'));

/**
 * The audit log every agent worker of a deployment writes and `airlock
 * audit` reads: the table `airlock_audit` of the shared database, one row
 * per event keyed by its id (`auditEventIds`). A batch is one statement,
 * all of it or none, and writing it again adds nothing: a retried audit
 * activity may simply write again. Each row keeps the event as the JSONL
 * log would have it, so both read back the same.
 */
export class PostgresAuditLog implements AuditSink, AuditReader {
  readonly idempotent = true;

  constructor(private readonly db: Database) {}

  async write(events: readonly AuditEvent[]): Promise<void> {
    if (events.length === 0) return;
    const ids = auditEventIds(events);
    await this.db.query({
      name: 'airlock-audit-write',
      text: `INSERT INTO airlock_audit (event_id, job_id, run_id, type, at, event)
             SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
             ON CONFLICT (event_id) DO NOTHING`,
      values: [
        ids,
        events.map((e) => column(e.jobId)),
        events.map((e) => column(e.runId)),
        events.map((e) => column(e.type)),
        events.map((e) => column(e.at)),
        events.map((e) => JSON.stringify(e)),
      ],
    });
  }

  async prune(olderThanMs: number): Promise<number> {
    const result = await this.db.query({
      name: 'airlock-audit-prune',
      text: `DELETE FROM airlock_audit WHERE written_at < clock_timestamp() - ($1::bigint * interval '1 millisecond')`,
      values: [Math.round(olderThanMs)],
    });
    return result.rowCount ?? 0;
  }

  async read(filter: AuditFilter): Promise<AuditRead> {
    const result = await this.db.query<{ seq: string; event: string }>({
      name: 'airlock-audit-read',
      text: `SELECT seq, event FROM airlock_audit
             WHERE ($1::text IS NULL OR job_id = $1)
               AND ($2::text IS NULL OR left(run_id, length($2)) = $2)
               AND ($3::text IS NULL OR type = $3)
             ORDER BY seq DESC LIMIT $4`,
      values: [filter.jobId ?? null, filter.runId ?? null, filter.type ?? null, filter.limit],
    });
    const events: StoredEvent[] = [];
    const unreadable: string[] = [];
    for (const row of result.rows.reverse()) {
      const event = parseStoredEvent(row.event);
      if (event === undefined) unreadable.push(`row ${row.seq}`);
      else events.push(event);
    }
    return { events, where: `${this.db.target} (table airlock_audit)`, unreadable };
  }
}
