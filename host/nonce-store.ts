import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';

/** What `execute` recorded after running a granted call. */
export interface StoredOutcome {
  readonly ok: boolean;
  readonly output: string;
}

export type ConsumeResult =
  | { readonly consumed: true }
  /** Already consumed; `outcome` is null when the earlier attempt never reported back. */
  | { readonly consumed: false; readonly outcome: StoredOutcome | null; readonly consumedAt: string };

export interface NonceRecord {
  readonly nonce: string;
  readonly jobId: string;
  readonly callId: string;
  readonly fingerprint: string;
}

/**
 * The tools side's durable record of consumed grant nonces. Consuming is a
 * compare-and-set (insert-if-absent) done before any side effect, so a
 * retried activity or a replayed decision can never run a call twice.
 * Every tools worker acting on the same resources must share this file.
 */
export class NonceStore {
  private readonly db: Database.Database;
  private readonly insert: Database.Statement;
  private readonly select: Database.Statement;
  private readonly finish: Database.Statement;

  constructor(file: string) {
    if (file !== ':memory:') mkdirSync(dirname(file), { recursive: true });
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.exec(`CREATE TABLE IF NOT EXISTS consumed_nonces (
      nonce TEXT PRIMARY KEY,
      job_id TEXT NOT NULL,
      call_id TEXT NOT NULL,
      fingerprint TEXT NOT NULL,
      consumed_at TEXT NOT NULL,
      outcome TEXT
    )`);
    this.insert = this.db.prepare(
      `INSERT INTO consumed_nonces (nonce, job_id, call_id, fingerprint, consumed_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT(nonce) DO NOTHING`,
    );
    this.select = this.db.prepare('SELECT consumed_at, outcome FROM consumed_nonces WHERE nonce = ?');
    this.finish = this.db.prepare('UPDATE consumed_nonces SET outcome = ? WHERE nonce = ?');
  }

  consume(record: NonceRecord): ConsumeResult {
    const info = this.insert.run(record.nonce, record.jobId, record.callId, record.fingerprint, new Date().toISOString());
    if (info.changes === 1) return { consumed: true };
    return this.lookup(record.nonce)!;
  }

  lookup(nonce: string): Extract<ConsumeResult, { consumed: false }> | undefined {
    const row = this.select.get(nonce) as { consumed_at: string; outcome: string | null } | undefined;
    if (row === undefined) return undefined;
    return {
      consumed: false,
      consumedAt: row.consumed_at,
      outcome: row.outcome === null ? null : (JSON.parse(row.outcome) as StoredOutcome),
    };
  }

  recordOutcome(nonce: string, outcome: StoredOutcome): void {
    this.finish.run(JSON.stringify(outcome), nonce);
  }

  close(): void {
    this.db.close();
  }
}
