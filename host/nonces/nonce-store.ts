import { createHash, randomUUID } from 'node:crypto';
import { chmodSync, closeSync, existsSync, mkdirSync, openSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import Database from 'better-sqlite3';
import { z } from 'zod';
import { AirlockError } from '../core/util/errors';
import { messageOf } from './tools/descriptors';
import { isFileState, observedStateSchema, type ObservedState } from '../core/tools/observed-state';

/** How a retried `execute` settled a call whose earlier attempt never recorded its outcome. */
export type Reconciled = 'ran_before' | 'ran_now' | 'unknown';

/**
 * What `execute` recorded after running a granted call: whether it worked,
 * and only the size and digest of its output. Tool output (a file read, a
 * listing) may hold secrets and never stays in the store.
 */
export interface StoredOutcome {
  readonly ok: boolean;
  readonly outputBytes: number;
  readonly outputSha256: string;
  /** Set when a retry settled the call by checking the target (the crashed attempt's own outcome was lost). */
  readonly reconciled?: Reconciled;
}

const storedOutcomeSchema = z.object({
  ok: z.boolean(),
  outputBytes: z.number().optional(),
  outputSha256: z.string().optional(),
  reconciled: z.enum(['ran_before', 'ran_now', 'unknown']).optional(),
});

export function storedOutcome(outcome: { readonly ok: boolean; readonly output: string }, reconciled?: Reconciled): StoredOutcome {
  return {
    ok: outcome.ok,
    outputBytes: Buffer.byteLength(outcome.output),
    outputSha256: createHash('sha256').update(outcome.output).digest('hex'),
    ...(reconciled !== undefined ? { reconciled } : {}),
  };
}

export type ConsumeResult =
  | { readonly consumed: true }
  /** Already consumed; `outcome` is null when the earlier attempt never reported back. */
  | {
      readonly consumed: false;
      readonly outcome: StoredOutcome | null;
      readonly consumedAt: string;
      /** The targets as the consuming attempt saw them right before its effect, paths as digests (absent in rows from before). */
      readonly before?: readonly ObservedState[];
    };

export interface NonceRecord {
  readonly nonce: string;
  readonly jobId: string;
  readonly callId: string;
  readonly fingerprint: string;
  /** The targets right before the effect: what a retry compares against to tell "not run" from "ran" (stored with paths as digests). */
  readonly before?: readonly ObservedState[];
}

/**
 * Paths are kept as digests: a file's name can be a secret (`token=…`), and
 * the store keeps nothing people could read one from. A retry matches them
 * against the paths it observes (`revealPaths`).
 */
export function pathDigest(path: string): string {
  return `sha256:${createHash('sha256').update(path, 'utf8').digest('hex')}`;
}

/** The recorded states with their paths back, where they match the targets' paths now (by position); others keep the digest and so compare as moved. */
export function revealPaths(before: readonly ObservedState[], current: readonly ObservedState[]): ObservedState[] {
  return before.map((state, i) => {
    const now = current[i];
    if (now === undefined || !isFileState(state) || !isFileState(now)) return state;
    return state.path === pathDigest(now.path) ? { ...state, path: now.path } : state;
  });
}

/** The store's file cannot be used; the worker stops at start with this one line. */
export class NonceStoreUnusable extends AirlockError {
  override name = 'NonceStoreUnusable';
}

/** How the store came to be, for the worker's start-up log. */
export type StoreOrigin =
  | { readonly kind: 'opened' }
  | { readonly kind: 'created' }
  /** The identity file next to it says a store existed here, but its database file is gone. */
  | { readonly kind: 'replaced_lost'; readonly lostId: string };

const SQLITE_UNREADABLE = new Set(['SQLITE_NOTADB', 'SQLITE_CORRUPT']);

function sqliteCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string' ? err.code : undefined;
}

/** The identity file beside the database: it outlives a deleted database file, so a lost store is noticed. */
export function identityFile(file: string): string {
  return `${file}.id`;
}

/**
 * The tools side's durable record of consumed grant nonces. Consuming is a
 * compare-and-set (insert-if-absent) done before any side effect, so a
 * retried activity or a replayed decision can never run a call twice.
 * Every tools worker acting on the same resources must share this file.
 *
 * The store has an identity (`store_meta.id`), written with it into every
 * row and into `<file>.id` beside it. A database file that is missing while
 * that identity file exists was lost (deleted, or not restored): it is
 * recreated with a new identity and `origin` says so, and retried calls are
 * then reconciled against the file system rather than run afresh (see
 * `execute`). A file that is not a database stops the worker at start.
 */
export class NonceStore {
  readonly id: string;
  readonly origin: StoreOrigin;
  private readonly db: Database.Database;
  private readonly insert: Database.Statement;
  private readonly select: Database.Statement;
  private readonly finish: Database.Statement;
  private readonly claimRow: Database.Statement;
  private readonly renewRow: Database.Statement;
  private readonly inode: number | undefined;

  constructor(private readonly file: string) {
    let origin: StoreOrigin = { kind: 'opened' };
    if (file !== ':memory:') {
      mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
      const marker = identityFile(file);
      if (!existsSync(file)) {
        const lostId = existsSync(marker) ? readFileSync(marker, 'utf8').trim() : '';
        origin = lostId === '' ? { kind: 'created' } : { kind: 'replaced_lost', lostId };
      }
      // Created 0600 before SQLite opens it; its journal files take the same mode.
      closeSync(openSync(file, 'a', 0o600));
      chmodSync(file, 0o600);
    }
    try {
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
      const columns = new Set((this.db.prepare('PRAGMA table_info(consumed_nonces)').all() as Array<{ name: string }>).map((c) => c.name));
      // Stores from before identities and reconciliation gain the columns; their old rows keep them empty.
      if (!columns.has('store_id')) this.db.exec('ALTER TABLE consumed_nonces ADD COLUMN store_id TEXT');
      if (!columns.has('before_state')) this.db.exec('ALTER TABLE consumed_nonces ADD COLUMN before_state TEXT');
      if (!columns.has('alive_at')) this.db.exec('ALTER TABLE consumed_nonces ADD COLUMN alive_at INTEGER');
      this.db.exec('CREATE TABLE IF NOT EXISTS store_meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)');
      this.db.prepare(`INSERT INTO store_meta (key, value) VALUES ('id', ?) ON CONFLICT(key) DO NOTHING`).run(randomUUID());
      this.db.prepare(`INSERT INTO store_meta (key, value) VALUES ('created_at', ?) ON CONFLICT(key) DO NOTHING`).run(new Date().toISOString());
      const row = this.db.prepare(`SELECT value FROM store_meta WHERE key = 'id'`).get() as { value: string } | undefined;
      this.id = row?.value ?? '';
    } catch (err) {
      const code = sqliteCode(err);
      if (code !== undefined && SQLITE_UNREADABLE.has(code)) {
        throw new NonceStoreUnusable(
          `the nonce store ${file} is not a readable SQLite database (${messageOf(err)}): restore it from a backup, ` +
            `or move it away to start an empty store, knowing that retried calls will then be reconciled against the file system`,
        );
      }
      throw err;
    }
    if (file !== ':memory:') {
      writeFileSync(identityFile(file), `${this.id}\n`, { mode: 0o600 });
      this.inode = statSync(file).ino;
    }
    this.origin = origin;
    this.insert = this.db.prepare(
      `INSERT INTO consumed_nonces (nonce, job_id, call_id, fingerprint, consumed_at, store_id, before_state, alive_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
       ON CONFLICT(nonce) DO NOTHING`,
    );
    this.claimRow = this.db.prepare('UPDATE consumed_nonces SET alive_at = ? WHERE nonce = ? AND outcome IS NULL AND (alive_at IS NULL OR alive_at <= ?)');
    this.renewRow = this.db.prepare('UPDATE consumed_nonces SET alive_at = ? WHERE nonce = ? AND outcome IS NULL');
    this.select = this.db.prepare('SELECT consumed_at, outcome, before_state FROM consumed_nonces WHERE nonce = ?');
    this.finish = this.db.prepare('UPDATE consumed_nonces SET outcome = ? WHERE nonce = ?');
  }

  /**
   * Refuses to consume into a file that is no longer the store's path: a
   * nonce written into a deleted (still open) file would be forgotten by
   * the next worker, which could then run the call again.
   */
  private checkFile(): void {
    if (this.inode === undefined) return;
    let ino: number | undefined;
    try {
      ino = statSync(this.file).ino;
    } catch {
      ino = undefined;
    }
    if (ino !== this.inode) {
      throw new NonceStoreUnusable(
        `the nonce store ${this.file} was removed or replaced while this worker had it open; restart the tools worker (${basename(this.file)} must be the file every tools worker shares)`,
      );
    }
  }

  consume(record: NonceRecord): ConsumeResult {
    this.checkFile();
    const before = record.before === undefined ? null : JSON.stringify(record.before.map((state) => (isFileState(state) ? { ...state, path: pathDigest(state.path) } : state)));
    const info = this.insert.run(record.nonce, record.jobId, record.callId, record.fingerprint, new Date().toISOString(), this.id, before, Date.now());
    if (info.changes === 1) return { consumed: true };
    const earlier = this.lookup(record.nonce);
    if (earlier === undefined) throw new Error(`nonce ${record.nonce} was neither inserted nor found`);
    return earlier;
  }

  lookup(nonce: string): Extract<ConsumeResult, { consumed: false }> | undefined {
    const row = this.select.get(nonce) as { consumed_at: string; outcome: string | null; before_state: string | null } | undefined;
    if (row === undefined) return undefined;
    const before = row.before_state === null ? undefined : parseBefore(row.before_state);
    return {
      consumed: false,
      consumedAt: row.consumed_at,
      outcome: row.outcome === null ? null : parseOutcome(row.outcome),
      ...(before !== undefined ? { before } : {}),
    };
  }

  /**
   * Takes over a consumed nonce without an outcome, for a retry to settle
   * it: only when the attempt holding it has not renewed it for `staleMs`
   * (a live attempt renews it while it works), and only one taker wins.
   */
  claim(nonce: string, staleMs: number): boolean {
    const at = Date.now();
    return this.claimRow.run(at, nonce, at - staleMs).changes === 1;
  }

  /** The attempt working on a consumed nonce is alive. */
  renew(nonce: string): void {
    this.renewRow.run(Date.now(), nonce);
  }

  recordOutcome(nonce: string, outcome: StoredOutcome): void {
    this.checkFile();
    this.finish.run(
      JSON.stringify({
        ok: outcome.ok,
        outputBytes: outcome.outputBytes,
        outputSha256: outcome.outputSha256,
        ...(outcome.reconciled !== undefined ? { reconciled: outcome.reconciled } : {}),
      }),
      nonce,
    );
  }

  close(): void {
    this.db.close();
  }
}

/** A stored outcome; rows written before outputs were dropped keep only whether the call worked. */
function parseOutcome(text: string): StoredOutcome {
  const parsed = storedOutcomeSchema.safeParse(JSON.parse(text));
  if (!parsed.success) return { ok: false, outputBytes: 0, outputSha256: '' };
  const { ok, outputBytes, outputSha256, reconciled } = parsed.data;
  return { ok, outputBytes: outputBytes ?? 0, outputSha256: outputSha256 ?? '', ...(reconciled !== undefined ? { reconciled } : {}) };
}

/** The recorded targets; a row that does not parse is treated as one without them (reconciliation then knows less, never more). */
function parseBefore(text: string): ObservedState[] | undefined {
  const parsed = z.array(observedStateSchema).safeParse(JSON.parse(text));
  return parsed.success ? parsed.data : undefined;
}
