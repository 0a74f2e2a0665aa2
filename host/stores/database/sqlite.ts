import { chmodSync, closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';

/**
 * Opens one of airlock's SQLite files, made private first: its folder 0700,
 * the file 0600 before SQLite opens it (its WAL and shared-memory files take
 * the file's mode), write-ahead logging, and a 5 s wait for a lock another
 * process holds. `:memory:` opens in memory. Every embedded store opens its
 * file this way.
 */
export function openSqlite(file: string): Database.Database {
  if (file !== ':memory:') {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    closeSync(openSync(file, 'a', 0o600));
    chmodSync(file, 0o600);
  }
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('busy_timeout = 5000');
  return db;
}
