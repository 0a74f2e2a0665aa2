import { createHash } from 'node:crypto';
import { chmodSync, closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { z } from 'zod';

/**
 * What `execute` recorded after running a granted call: whether it worked,
 * and only the size and digest of its output. Tool output (a file read, a
 * listing) may hold secrets and never stays in the store.
 */
export interface StoredOutcome {
  readonly ok: boolean;
  readonly outputBytes: number;
  readonly outputSha256: string;
}

const storedOutcomeSchema = z.object({ ok: z.boolean(), outputBytes: z.number().optional(), outputSha256: z.string().optional() });

export function storedOutcome(outcome: { readonly ok: boolean; readonly output: string }): StoredOutcome {
  return { ok: outcome.ok, outputBytes: Buffer.byteLength(outcome.output), outputSha256: createHash('sha256').update(outcome.output).digest('hex') };
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
    if (file !== ':memory:') {
      mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
      // Created 0600 before SQLite opens it; its journal files take the same mode.
      closeSync(openSync(file, 'a', 0o600));
      chmodSync(file, 0o600);
    }
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
    return { consumed: false, consumedAt: row.consumed_at, outcome: row.outcome === null ? null : parseOutcome(row.outcome) };
  }

  recordOutcome(nonce: string, outcome: StoredOutcome): void {
    this.finish.run(JSON.stringify({ ok: outcome.ok, outputBytes: outcome.outputBytes, outputSha256: outcome.outputSha256 }), nonce);
  }

  close(): void {
    this.db.close();
  }
}

/** A stored outcome; rows written before outputs were dropped keep only whether the call worked. */
function parseOutcome(text: string): StoredOutcome {
  const parsed = storedOutcomeSchema.safeParse(JSON.parse(text));
  if (!parsed.success) return { ok: false, outputBytes: 0, outputSha256: '' };
  return { ok: parsed.data.ok, outputBytes: parsed.data.outputBytes ?? 0, outputSha256: parsed.data.outputSha256 ?? '' };
}
