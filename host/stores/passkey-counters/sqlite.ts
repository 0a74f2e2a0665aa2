import type Database from 'better-sqlite3';
import { openSqlite } from '../database/sqlite';
import { type PasskeyCounters } from './store';

export class SqlitePasskeyCounters implements PasskeyCounters {
  private readonly db: Database.Database;

  constructor(file: string) {
    this.db = openSqlite(file);
    this.db.exec(`CREATE TABLE IF NOT EXISTS passkey_counters (
      credential_id TEXT PRIMARY KEY,
      counter INTEGER NOT NULL,
      assertion TEXT NOT NULL,
      updated_at TEXT NOT NULL
    )`);
  }

  async last(credentialId: string): Promise<{ counter: number; assertion: string } | undefined> {
    return this.db.prepare('SELECT counter, assertion FROM passkey_counters WHERE credential_id = ?').get(credentialId) as { counter: number; assertion: string } | undefined;
  }

  async advance(credentialId: string, counter: number, assertion: string): Promise<boolean> {
    this.db
      .prepare(
        `INSERT INTO passkey_counters (credential_id, counter, assertion, updated_at) VALUES (?, ?, ?, ?)
         ON CONFLICT(credential_id) DO UPDATE SET counter = excluded.counter, assertion = excluded.assertion, updated_at = excluded.updated_at
         WHERE passkey_counters.counter < excluded.counter`,
      )
      .run(credentialId, counter, assertion, new Date().toISOString());
    const now = await this.last(credentialId);
    return now?.counter === counter && now.assertion === assertion;
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
