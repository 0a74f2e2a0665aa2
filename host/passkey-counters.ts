import { mkdirSync, closeSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';

/**
 * The signature counter each passkey last presented. An authenticator that
 * counts raises it with every assertion; one seen going back (or standing
 * still) is a copy of the credential being used beside the original, and
 * its decisions are refused. Authenticators that do not count (synced
 * passkeys send 0) are not tracked. Shared by every agent worker: a data
 * folder's SQLite file, or the shared database.
 */
export interface PasskeyCounters {
  /** What was last accepted for this credential: its counter and which assertion (a digest) brought it; undefined when none. */
  last(credentialId: string): Promise<{ readonly counter: number; readonly assertion: string } | undefined>;
  /**
   * Accepts this assertion's counter when it is above the last one (or it
   * is the very assertion accepted last, seen again by a retry): one
   * compare-and-set, so of two presenting the same counter at once one
   * wins. False: another assertion got there first.
   */
  advance(credentialId: string, counter: number, assertion: string): Promise<boolean>;
  close(): Promise<void>;
}

export class SqlitePasskeyCounters implements PasskeyCounters {
  private readonly db: Database.Database;

  constructor(file: string) {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    // Created 0600 before SQLite opens it.
    closeSync(openSync(file, 'a', 0o600));
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('busy_timeout = 5000');
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
