import { createHash } from 'node:crypto';
import { chmodSync, closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';

/**
 * The agent side's content-addressed store for conversations: what a job
 * says and reads stays here, and workflow history carries only digests.
 * Every agent worker of a job must reach the same store: this SQLite file
 * on one host, PostgreSQL (`AIRLOCK_CONTENT_DB`) across hosts.
 */
export interface ContentStore {
  /**
   * Stores a text and returns its sha256 (hex); storing it again is a no-op.
   * Texts are JSON, so they hold no NUL character (PostgreSQL's text cannot).
   */
  put(text: string): Promise<string>;
  /** The text under a digest, or undefined when the store never held it. */
  get(digest: string): Promise<string | undefined>;
  close(): Promise<void>;
}

export function digestOf(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** The embedded store: one SQLite file per host (better-sqlite3, synchronous underneath). */
export class SqliteContentStore implements ContentStore {
  private readonly db: Database.Database;
  private readonly insert: Database.Statement;
  private readonly select: Database.Statement;

  constructor(file: string) {
    if (file !== ':memory:') {
      mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
      closeSync(openSync(file, 'a', 0o600));
      chmodSync(file, 0o600);
    }
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.exec('CREATE TABLE IF NOT EXISTS contents (digest TEXT PRIMARY KEY, text TEXT NOT NULL, stored_at TEXT NOT NULL)');
    this.insert = this.db.prepare('INSERT INTO contents (digest, text, stored_at) VALUES (?, ?, ?) ON CONFLICT(digest) DO NOTHING');
    this.select = this.db.prepare('SELECT text FROM contents WHERE digest = ?');
  }

  async put(text: string): Promise<string> {
    const digest = digestOf(text);
    this.insert.run(digest, text, new Date().toISOString());
    return digest;
  }

  async get(digest: string): Promise<string | undefined> {
    const row: unknown = this.select.get(digest);
    return row !== null && typeof row === 'object' && 'text' in row && typeof row.text === 'string' ? row.text : undefined;
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
