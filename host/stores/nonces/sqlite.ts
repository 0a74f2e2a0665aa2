import { randomUUID } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname } from 'node:path';
import type Database from 'better-sqlite3';
import { messageOf } from '../../fs/descriptors';
import { openSqlite } from '../database/sqlite';
import { beforeText, lostNonce, NonceStoreUnusable, outcomeText, parseBefore, parseOutcome, type ConsumeResult, type NonceRecord, type NonceStore, type StoreOrigin, type StoredOutcome } from './store';
import { storedUndo, undoRecordsOf, parseUndoRecord, type UndoQuery, type UndoRecord, type UndoState } from './undo-records';

const SQLITE_UNREADABLE = new Set(['SQLITE_NOTADB', 'SQLITE_CORRUPT']);

function sqliteCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string' ? err.code : undefined;
}

type UndoFilter = 'all' | 'job' | 'state' | 'both';

function undoFilter(query: UndoQuery): UndoFilter {
  if (query.jobId !== undefined) return query.state !== undefined ? 'both' : 'job';
  return query.state !== undefined ? 'state' : 'all';
}

/** The identity file beside the database: it outlives a deleted database file, so a lost store is noticed. */
export function identityFile(file: string): string {
  return `${file}.id`;
}

/**
 * The embedded nonce store: one SQLite file on the tools worker's machine,
 * which every tools worker acting on the same resources must share.
 *
 * The store has an identity (`store_meta.id`), written with it into every
 * row and into `<file>.id` beside it. A database file that is missing while
 * that identity file exists was lost (deleted, or not restored): it is
 * recreated with a new identity and `origin` says so, and retried calls are
 * then reconciled against the file system rather than run afresh (see
 * `execute`). A file that is not a database stops the worker at start.
 */
export class SqliteNonceStore implements NonceStore {
  readonly id: string;
  readonly origin: StoreOrigin;
  readonly where: string;
  private readonly db: Database.Database;
  private readonly insert: Database.Statement;
  private readonly select: Database.Statement;
  private readonly finish: Database.Statement;
  private readonly claimRow: Database.Statement;
  private readonly renewRow: Database.Statement;
  private readonly aliveRow: Database.Statement;
  private readonly insertUndo: Database.Statement;
  private readonly selectUndo: Database.Statement;
  private readonly listUndo: Record<UndoFilter, Database.Statement>;
  private readonly settleUndoRow: Database.Statement;
  private readonly reviseUndoRow: Database.Statement;
  private readonly expiredUndoRows: Database.Statement;
  private readonly undoOfCall: Database.Statement;
  private readonly heldBytesRow: Database.Statement;
  private readonly inode: number | undefined;

  constructor(private readonly file: string) {
    this.where = file;
    let origin: StoreOrigin = { kind: 'opened' };
    if (file !== ':memory:') {
      mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
      const marker = identityFile(file);
      if (!existsSync(file)) {
        const lostId = existsSync(marker) ? readFileSync(marker, 'utf8').trim() : '';
        origin = lostId === '' ? { kind: 'created' } : { kind: 'replaced_lost', lostId };
      }
    }
    try {
      this.db = openSqlite(file);
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
      // `record` is the whole record; the other columns are copies of its fields to find and order by. expires_at is ms.
      this.db.exec(`CREATE TABLE IF NOT EXISTS undo_records (
        nonce TEXT PRIMARY KEY,
        job_id TEXT NOT NULL,
        state TEXT NOT NULL,
        held_at TEXT NOT NULL,
        expires_at INTEGER NOT NULL,
        record TEXT NOT NULL
      )`);
      this.db.exec('CREATE INDEX IF NOT EXISTS undo_records_job ON undo_records (job_id, held_at)');
      this.db.exec('CREATE INDEX IF NOT EXISTS undo_records_expiry ON undo_records (state, expires_at)');
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
    this.aliveRow = this.db.prepare('SELECT alive_at FROM consumed_nonces WHERE nonce = ? AND outcome IS NULL');
    this.select = this.db.prepare('SELECT consumed_at, outcome, before_state FROM consumed_nonces WHERE nonce = ?');
    this.finish = this.db.prepare('UPDATE consumed_nonces SET outcome = ? WHERE nonce = ?');
    this.insertUndo = this.db.prepare(
      `INSERT INTO undo_records (nonce, job_id, state, held_at, expires_at, record) VALUES (?, ?, ?, ?, ?, ?)
       ON CONFLICT(nonce) DO NOTHING`,
    );
    this.selectUndo = this.db.prepare('SELECT record FROM undo_records WHERE nonce = ?');
    // A statement per filter, so a job's records are read through its index.
    const list = (where: string) => this.db.prepare(`SELECT record FROM undo_records ${where} ORDER BY held_at DESC, nonce DESC LIMIT @limit`);
    this.listUndo = {
      all: list(''),
      job: list('WHERE job_id = @jobId'),
      state: list('WHERE state = @state'),
      both: list('WHERE job_id = @jobId AND state = @state'),
    };
    // One statement: the state is compared and set, and the record's JSON changed with it, at once.
    this.settleUndoRow = this.db.prepare(
      `UPDATE undo_records SET state = ?, record = json_set(record, '$.state', ?, '$.settledAt', ?) WHERE nonce = ? AND state = 'held'`,
    );
    // The stored times and state win over the revised record's own.
    this.reviseUndoRow = this.db.prepare(
      `UPDATE undo_records SET record = json_set(?, '$.heldAt', json_extract(record, '$.heldAt'), '$.expiresAt', json_extract(record, '$.expiresAt'), '$.state', state, '$.jobId', job_id) WHERE nonce = ? AND state = 'held'`,
    );
    this.expiredUndoRows = this.db.prepare(`SELECT record FROM undo_records WHERE state = 'held' AND expires_at < ? ORDER BY expires_at, nonce LIMIT ?`);
    this.undoOfCall = this.db.prepare(`SELECT record FROM undo_records WHERE job_id = ? AND json_extract(record, '$.callId') = ? ORDER BY held_at DESC, nonce DESC LIMIT 1`);
    // Asked before every delete in a root kept for undo (its quota): prepared once.
    this.heldBytesRow = this.db.prepare(
      `SELECT COALESCE(SUM(COALESCE(json_extract(record, '$.asideBytes'), CASE WHEN COALESCE(json_extract(record, '$.change.kind'), 'moved_aside') = 'moved_aside' THEN json_extract(record, '$.held.bytes') ELSE 0 END)), 0) AS bytes FROM undo_records WHERE state = 'held' AND json_extract(record, '$.root') = ?`,
    );
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

  async consume(record: NonceRecord): Promise<ConsumeResult> {
    this.checkFile();
    const info = this.insert.run(record.nonce, record.jobId, record.callId, record.fingerprint, new Date().toISOString(), this.id, beforeText(record.before), Date.now());
    if (info.changes === 1) return { consumed: true };
    const earlier = await this.lookup(record.nonce);
    if (earlier === undefined) throw new Error(`nonce ${record.nonce} was neither inserted nor found`);
    return earlier;
  }

  async lookup(nonce: string): Promise<Extract<ConsumeResult, { consumed: false }> | undefined> {
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

  async claim(nonce: string, staleMs: number): Promise<boolean> {
    const at = Date.now();
    return this.claimRow.run(at, nonce, at - staleMs).changes === 1;
  }

  async renew(nonce: string): Promise<void> {
    this.renewRow.run(Date.now(), nonce);
  }

  async silentFor(nonce: string): Promise<number | undefined> {
    const row = this.aliveRow.get(nonce) as { alive_at: number | null } | undefined;
    if (row === undefined) return undefined;
    // A row from before leases has none: its holder is long gone.
    return row.alive_at === null ? Number.MAX_SAFE_INTEGER : Date.now() - row.alive_at;
  }

  async recordOutcome(nonce: string, outcome: StoredOutcome): Promise<void> {
    this.checkFile();
    if (this.finish.run(outcomeText(outcome), nonce).changes === 0) throw lostNonce(nonce, this.where);
  }

  async prune(olderThanMs: number): Promise<number> {
    // consumed_at is ISO 8601 in UTC: it sorts as it reads.
    return this.db.prepare('DELETE FROM consumed_nonces WHERE consumed_at < ?').run(new Date(Date.now() - olderThanMs).toISOString()).changes;
  }

  async recordUndo(record: UndoRecord): Promise<boolean> {
    const stored = storedUndo(record);
    this.checkFile();
    const { nonce, jobId, state } = stored.record;
    return this.insertUndo.run(nonce, jobId, state, stored.heldAt, stored.expiresAt, stored.json).changes === 1;
  }

  async reviseUndo(record: UndoRecord): Promise<boolean> {
    const stored = storedUndo(record);
    this.checkFile();
    return this.reviseUndoRow.run(stored.json, stored.record.nonce).changes === 1;
  }

  async undoRecord(nonce: string): Promise<UndoRecord | undefined> {
    const row = this.selectUndo.get(nonce) as { record: string } | undefined;
    return row === undefined ? undefined : parseUndoRecord(row.record);
  }

  async undoRecordOfCall(jobId: string, callId: string): Promise<UndoRecord | undefined> {
    return undoRecordsOf(this.undoOfCall.all(jobId, callId) as Array<{ record: string }>)[0];
  }

  async undoRecords(query: UndoQuery): Promise<UndoRecord[]> {
    const rows = this.listUndo[undoFilter(query)].all({ jobId: query.jobId ?? null, state: query.state ?? null, limit: query.limit }) as Array<{ record: string }>;
    return undoRecordsOf(rows);
  }

  async settleUndo(nonce: string, to: Exclude<UndoState, 'held'>): Promise<boolean> {
    this.checkFile();
    return this.settleUndoRow.run(to, to, new Date().toISOString(), nonce).changes === 1;
  }

  async expiredUndo(now: number, limit: number): Promise<UndoRecord[]> {
    return undoRecordsOf(this.expiredUndoRows.all(now, limit) as Array<{ record: string }>);
  }

  async heldBytes(root: string): Promise<number> {
    return Number((this.heldBytesRow.get(root) as { bytes: number }).bytes);
  }

  async pruneUndo(olderThanMs: number): Promise<number> {
    return this.db.prepare(`DELETE FROM undo_records WHERE state != 'held' AND expires_at < ?`).run(Date.now() - olderThanMs).changes;
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
