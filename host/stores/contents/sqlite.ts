import type Database from 'better-sqlite3';
import { openSqlite } from '../database/sqlite';
import { type ContentStore, digestOf } from './store';

/** The embedded store: one SQLite file per host (better-sqlite3, synchronous underneath). */
export class SqliteContentStore implements ContentStore {
  private readonly db: Database.Database;
  private readonly insert: Database.Statement;
  private readonly select: Database.Statement;
  private readonly ref: Database.Statement;

  constructor(file: string) {
    this.db = openSqlite(file);
    this.db.exec('CREATE TABLE IF NOT EXISTS contents (digest TEXT PRIMARY KEY, text TEXT NOT NULL, stored_at TEXT NOT NULL)');
    // Which job stored which text, and when last: what retention goes by.
    this.db.exec('CREATE TABLE IF NOT EXISTS content_refs (digest TEXT NOT NULL, job_id TEXT NOT NULL, used_at INTEGER NOT NULL, PRIMARY KEY (digest, job_id))');
    this.db.exec('CREATE INDEX IF NOT EXISTS content_refs_job ON content_refs (job_id, used_at)');
    this.insert = this.db.prepare('INSERT INTO contents (digest, text, stored_at) VALUES (?, ?, ?) ON CONFLICT(digest) DO NOTHING');
    this.ref = this.db.prepare('INSERT INTO content_refs (digest, job_id, used_at) VALUES (?, ?, ?) ON CONFLICT(digest, job_id) DO UPDATE SET used_at = excluded.used_at');
    this.select = this.db.prepare('SELECT text FROM contents WHERE digest = ?');
  }

  async put(text: string, jobId?: string): Promise<string> {
    const digest = digestOf(text);
    this.db.transaction(() => {
      this.insert.run(digest, text, new Date().toISOString());
      if (jobId !== undefined) this.ref.run(digest, jobId, Date.now());
    })();
    return digest;
  }

  async prune(olderThanMs: number, running: (jobId: string) => Promise<boolean>): Promise<number> {
    const cutoff = Date.now() - olderThanMs;
    const idle = this.db.prepare('SELECT job_id FROM content_refs GROUP BY job_id HAVING MAX(used_at) < ?').all(cutoff) as Array<{ job_id: string }>;
    let removed = 0;
    for (const { job_id: jobId } of idle) {
      // Parked for long is not finished: asked again after another retention period.
      if (await running(jobId)) {
        this.db.prepare('UPDATE content_refs SET used_at = ? WHERE job_id = ?').run(Date.now(), jobId);
        continue;
      }
      removed += this.db.transaction(() => {
        const digests = (this.db.prepare('DELETE FROM content_refs WHERE job_id = ? RETURNING digest').all(jobId) as Array<{ digest: string }>).map((r) => r.digest);
        let gone = 0;
        for (const digest of digests) {
          gone += this.db.prepare('DELETE FROM contents WHERE digest = ? AND NOT EXISTS (SELECT 1 FROM content_refs WHERE digest = ?)').run(digest, digest).changes;
        }
        return gone;
      })();
    }
    return removed;
  }

  async get(digest: string): Promise<string | undefined> {
    const row: unknown = this.select.get(digest);
    return row !== null && typeof row === 'object' && 'text' in row && typeof row.text === 'string' ? row.text : undefined;
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
