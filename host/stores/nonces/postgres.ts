import { SERVER_NOW_MS as NOW_MS, type Database } from '../database/postgres';
import { beforeText, lostNonce, parseBefore, parseOutcome, outcomeText, type ConsumeResult, type NonceRecord, type NonceStore, type StoreOrigin, type StoredOutcome } from './store';
import { storedUndo, undoRecordsOf, parseUndoRecord, type UndoQuery, type UndoRecord, type UndoState } from './undo-records';

/**
 * A named query per filter, so a job's records are read through its index
 * (the generic plan of one query with optional filters would not be).
 */
function undoList(query: UndoQuery): { name: string; where: string; values: string[] } {
  const { jobId, state } = query;
  if (jobId !== undefined && state !== undefined) return { name: 'airlock-undo-list-job-state', where: 'WHERE job_id = $2 AND state = $3', values: [jobId, state] };
  if (jobId !== undefined) return { name: 'airlock-undo-list-job', where: 'WHERE job_id = $2', values: [jobId] };
  if (state !== undefined) return { name: 'airlock-undo-list-state', where: 'WHERE state = $2', values: [state] };
  return { name: 'airlock-undo-list', where: '', values: [] };
}

/**
 * The nonce/outcome store every tools worker of a deployment shares, in
 * the PostgreSQL database (`AIRLOCK_DATABASE_URL`). Consuming is one
 * insert-if-absent, so of any number of workers on any number of machines
 * exactly one consumes a nonce. The reconciliation lease is timed by the
 * server's clock, so machines whose clocks differ agree on when a holder
 * went silent. Open it with `open` after the schema has been checked.
 */
export class PostgresNonceStore implements NonceStore {
  readonly origin: StoreOrigin = { kind: 'opened' };

  private constructor(
    private readonly db: Database,
    readonly id: string,
    /** Where this store is, password hidden: its name in messages. */
    readonly where: string,
  ) {}

  static async open(db: Database): Promise<PostgresNonceStore> {
    const row = await db.query<{ value: string }>(`SELECT value FROM airlock_store_meta WHERE key = 'nonce_store_id'`);
    const id = row.rows[0]?.value;
    if (id === undefined) throw new Error(`the database ${db.target} has no nonce store identity; run \`airlock setup\``);
    return new PostgresNonceStore(db, id, db.target);
  }

  async consume(record: NonceRecord): Promise<ConsumeResult> {
    const inserted = await this.db.query({
      name: 'airlock-nonce-consume',
      text: `INSERT INTO airlock_nonces (nonce, job_id, call_id, fingerprint, store_id, before_state, alive_at)
             VALUES ($1, $2, $3, $4, $5, $6, ${NOW_MS}) ON CONFLICT (nonce) DO NOTHING RETURNING nonce`,
      values: [record.nonce, record.jobId, record.callId, record.fingerprint, this.id, beforeText(record.before)],
    });
    if (inserted.rowCount === 1) return { consumed: true };
    const earlier = await this.lookup(record.nonce);
    if (earlier === undefined) throw new Error(`nonce ${record.nonce} was neither inserted nor found`);
    return earlier;
  }

  async lookup(nonce: string): Promise<Extract<ConsumeResult, { consumed: false }> | undefined> {
    const result = await this.db.query<{ consumed_at: Date; outcome: string | null; before_state: string | null }>({
      name: 'airlock-nonce-lookup',
      text: 'SELECT consumed_at, outcome, before_state FROM airlock_nonces WHERE nonce = $1',
      values: [nonce],
    });
    const row = result.rows[0];
    if (row === undefined) return undefined;
    const before = row.before_state === null ? undefined : parseBefore(row.before_state);
    return {
      consumed: false,
      consumedAt: row.consumed_at.toISOString(),
      outcome: row.outcome === null ? null : parseOutcome(row.outcome),
      ...(before !== undefined ? { before } : {}),
    };
  }

  async claim(nonce: string, staleMs: number): Promise<boolean> {
    const result = await this.db.query({
      name: 'airlock-nonce-claim',
      text: `UPDATE airlock_nonces SET alive_at = ${NOW_MS}
             WHERE nonce = $1 AND outcome IS NULL AND (alive_at IS NULL OR alive_at <= ${NOW_MS} - $2)`,
      values: [nonce, staleMs],
    });
    return result.rowCount === 1;
  }

  async renew(nonce: string): Promise<void> {
    await this.db.query({ name: 'airlock-nonce-renew', text: `UPDATE airlock_nonces SET alive_at = ${NOW_MS} WHERE nonce = $1 AND outcome IS NULL`, values: [nonce] });
  }

  async silentFor(nonce: string): Promise<number | undefined> {
    const result = await this.db.query<{ silent: string | null }>({
      name: 'airlock-nonce-silent',
      text: `SELECT ${NOW_MS} - alive_at AS silent FROM airlock_nonces WHERE nonce = $1 AND outcome IS NULL`,
      values: [nonce],
    });
    const row = result.rows[0];
    if (row === undefined) return undefined;
    return row.silent === null ? Number.MAX_SAFE_INTEGER : Number(row.silent);
  }

  async recordOutcome(nonce: string, outcome: StoredOutcome): Promise<void> {
    const result = await this.db.query({ name: 'airlock-nonce-outcome', text: 'UPDATE airlock_nonces SET outcome = $1 WHERE nonce = $2', values: [outcomeText(outcome), nonce] });
    if (result.rowCount === 0) throw lostNonce(nonce, this.where);
  }

  async prune(olderThanMs: number): Promise<number> {
    const result = await this.db.query({
      name: 'airlock-nonce-prune',
      text: `DELETE FROM airlock_nonces WHERE consumed_at < clock_timestamp() - ($1::bigint * interval '1 millisecond')`,
      values: [Math.round(olderThanMs)],
    });
    return result.rowCount ?? 0;
  }

  async recordUndo(record: UndoRecord): Promise<boolean> {
    const stored = storedUndo(record);
    const inserted = await this.db.query({
      name: 'airlock-undo-record',
      text: `INSERT INTO airlock_undo (nonce, job_id, state, held_at, expires_at, record) VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (nonce) DO NOTHING RETURNING nonce`,
      values: [stored.record.nonce, stored.record.jobId, stored.record.state, stored.heldAt, stored.expiresAt, stored.json],
    });
    return inserted.rowCount === 1;
  }

  async reviseUndo(record: UndoRecord): Promise<boolean> {
    const stored = storedUndo(record);
    // The stored times, job and state win over the revised record's own.
    const revised = await this.db.query({
      name: 'airlock-undo-revise',
      text: `UPDATE airlock_undo SET record = ($1::jsonb || jsonb_build_object('heldAt', record::jsonb -> 'heldAt', 'expiresAt', record::jsonb -> 'expiresAt', 'state', state, 'jobId', job_id))::text
             WHERE nonce = $2 AND state = 'held'`,
      values: [stored.json, stored.record.nonce],
    });
    return revised.rowCount === 1;
  }

  async undoRecord(nonce: string): Promise<UndoRecord | undefined> {
    const result = await this.db.query<{ record: string }>({ name: 'airlock-undo-get', text: 'SELECT record FROM airlock_undo WHERE nonce = $1', values: [nonce] });
    const row = result.rows[0];
    return row === undefined ? undefined : parseUndoRecord(row.record);
  }

  async undoRecordOfCall(jobId: string, callId: string): Promise<UndoRecord | undefined> {
    const result = await this.db.query<{ record: string }>({
      name: 'airlock-undo-of-call',
      text: `SELECT record FROM airlock_undo WHERE job_id = $1 AND record::jsonb ->> 'callId' = $2 ORDER BY held_at DESC, nonce DESC LIMIT 1`,
      values: [jobId, callId],
    });
    return undoRecordsOf(result.rows)[0];
  }

  async undoRecords(query: UndoQuery): Promise<UndoRecord[]> {
    const list = undoList(query);
    const result = await this.db.query<{ record: string }>({
      name: list.name,
      text: `SELECT record FROM airlock_undo ${list.where} ORDER BY held_at DESC, nonce DESC LIMIT $1`,
      values: [query.limit, ...list.values],
    });
    return undoRecordsOf(result.rows);
  }

  async settleUndo(nonce: string, to: Exclude<UndoState, 'held'>): Promise<boolean> {
    // One statement: the state is compared and set, and the record's JSON changed with it, at once; a concurrent settle waits and then finds it no longer held.
    const result = await this.db.query({
      name: 'airlock-undo-settle',
      text: `UPDATE airlock_undo SET state = $2, record = (record::jsonb || jsonb_build_object('state', $2::text, 'settledAt', $3::text))::text
             WHERE nonce = $1 AND state = 'held'`,
      values: [nonce, to, new Date().toISOString()],
    });
    return result.rowCount === 1;
  }

  async expiredUndo(now: number, limit: number): Promise<UndoRecord[]> {
    const result = await this.db.query<{ record: string }>({
      name: 'airlock-undo-expired',
      text: `SELECT record FROM airlock_undo WHERE state = 'held' AND expires_at < $1 ORDER BY expires_at, nonce LIMIT $2`,
      // expires_at is whole ms: before `now` is before its ceiling, and a bigint parameter takes no fraction.
      values: [Math.ceil(now), limit],
    });
    return undoRecordsOf(result.rows);
  }

  async heldBytes(root: string): Promise<number> {
    const result = await this.db.query<{ bytes: string }>({
      name: 'airlock-undo-held-bytes',
      text: `SELECT COALESCE(SUM(COALESCE((record::jsonb ->> 'asideBytes')::bigint, CASE WHEN COALESCE(record::jsonb -> 'change' ->> 'kind', 'moved_aside') = 'moved_aside' THEN (record::jsonb -> 'held' ->> 'bytes')::bigint ELSE 0 END)), 0)::text AS bytes FROM airlock_undo WHERE state = 'held' AND record::jsonb ->> 'root' = $1`,
      values: [root],
    });
    return Number(result.rows[0]?.bytes ?? 0);
  }

  async pruneUndo(olderThanMs: number): Promise<number> {
    const result = await this.db.query({
      name: 'airlock-undo-prune',
      text: `DELETE FROM airlock_undo WHERE state != 'held' AND expires_at < ${NOW_MS} - $1::bigint`,
      values: [Math.round(olderThanMs)],
    });
    return result.rowCount ?? 0;
  }

  /** The database is the deployment's; whoever opened it closes it. */
  async close(): Promise<void> {}
}
