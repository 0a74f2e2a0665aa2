import { Database, type DatabaseOptions } from './database/postgres';
import { digestOf, type ContentStore } from './content-store';

const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS airlock_contents (
  digest text PRIMARY KEY,
  text text NOT NULL,
  stored_at timestamptz NOT NULL DEFAULT now()
)`;

/**
 * The shared conversation store: the table `airlock_contents` of the
 * deployment's database, which every agent worker reaches. Workers get it
 * with `on(db)` once the schema is checked (`airlock setup` creates the
 * table); `open(url)` also creates the table itself, for a database used
 * for conversations alone.
 */
export class PostgresContentStore implements ContentStore {
  private constructor(
    private readonly db: Database,
    /** Closed with the store only when the store opened it. */
    private readonly owned: boolean,
  ) {}

  static on(db: Database): PostgresContentStore {
    return new PostgresContentStore(db, false);
  }

  /** Connects and creates the table if it is missing, so a wrong setting fails here, not mid-job. */
  static async open(url: string, options: DatabaseOptions = {}): Promise<PostgresContentStore> {
    const db = Database.open(url, options);
    try {
      await db.transaction(async (q) => {
        // Workers starting together would race inside CREATE TABLE IF NOT EXISTS
        // (duplicate type or table errors): they take turns on an advisory lock.
        await q.query("SELECT pg_advisory_xact_lock(hashtext('airlock_contents'))");
        await q.query(CREATE_TABLE);
      });
    } catch (err) {
      await db.close().catch(() => undefined);
      throw err;
    }
    return new PostgresContentStore(db, true);
  }

  async put(text: string): Promise<string> {
    const digest = digestOf(text);
    await this.db.query({
      name: 'airlock-contents-put',
      text: 'INSERT INTO airlock_contents (digest, text) VALUES ($1, $2) ON CONFLICT (digest) DO NOTHING',
      values: [digest, text],
    });
    return digest;
  }

  async get(digest: string): Promise<string | undefined> {
    const result = await this.db.query<{ text: unknown }>({
      name: 'airlock-contents-get',
      text: 'SELECT text FROM airlock_contents WHERE digest = $1',
      values: [digest],
    });
    const text = result.rows[0]?.text;
    return typeof text === 'string' ? text : undefined;
  }

  async close(): Promise<void> {
    if (this.owned) await this.db.close();
  }
}
