import type { Database } from './database/postgres';
import { digestOf, type ContentStore } from './content-store';

/**
 * The shared conversation store: the table `airlock_contents` of the
 * deployment's database (created by `airlock setup`), which every agent
 * worker reaches.
 */
export class PostgresContentStore implements ContentStore {
  private constructor(private readonly db: Database) {}

  static on(db: Database): PostgresContentStore {
    return new PostgresContentStore(db);
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

  /** The database is the deployment's; whoever opened it closes it. */
  async close(): Promise<void> {}
}
