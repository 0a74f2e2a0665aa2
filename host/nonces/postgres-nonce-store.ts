import { SERVER_NOW_MS as NOW_MS, type Database } from '../database/postgres';
import { beforeText, lostNonce, parseBefore, parseOutcome, outcomeText, type ConsumeResult, type NonceRecord, type NonceStore, type StoreOrigin, type StoredOutcome } from './nonce-store';


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

  /** The database is the deployment's; whoever opened it closes it. */
  async close(): Promise<void> {}
}
