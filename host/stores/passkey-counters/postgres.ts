import type { Database } from '../database/postgres';
import type { PasskeyCounters } from './store';

/** Passkey signature counters in the shared database (table `airlock_passkey_counters`), for every agent worker on every machine. */
export class PostgresPasskeyCounters implements PasskeyCounters {
  constructor(private readonly db: Database) {}

  async last(credentialId: string): Promise<{ counter: number; assertion: string } | undefined> {
    const { rows } = await this.db.query<{ counter: string; assertion: string }>({
      text: 'SELECT counter, assertion FROM airlock_passkey_counters WHERE credential_id = $1',
      values: [credentialId],
    });
    const row = rows[0];
    return row === undefined ? undefined : { counter: Number(row.counter), assertion: row.assertion };
  }

  async advance(credentialId: string, counter: number, assertion: string): Promise<boolean> {
    await this.db.query({
      text: `INSERT INTO airlock_passkey_counters (credential_id, counter, assertion) VALUES ($1, $2, $3)
             ON CONFLICT (credential_id) DO UPDATE SET counter = excluded.counter, assertion = excluded.assertion, updated_at = now()
             WHERE airlock_passkey_counters.counter < excluded.counter`,
      values: [credentialId, counter, assertion],
    });
    const now = await this.last(credentialId);
    return now?.counter === counter && now.assertion === assertion;
  }

  async close(): Promise<void> {
    // The database belongs to the process.
  }
}
