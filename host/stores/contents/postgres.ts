import type { Database } from '../database/postgres';
import { digestOf, type ContentStore } from './store';

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

  /**
   * The text and the job's reference to it, in one statement. Storing a
   * text again marks it as just stored, which also keeps a prune that is
   * removing it at the same moment from taking it (it removes only texts
   * stored before its cutoff, checked again on the row it waits for).
   */
  async put(text: string, jobId?: string): Promise<string> {
    const digest = digestOf(text);
    if (jobId === undefined) {
      await this.db.query({
        name: 'airlock-contents-put',
        text: 'INSERT INTO airlock_contents (digest, text) VALUES ($1, $2) ON CONFLICT (digest) DO NOTHING',
        values: [digest, text],
      });
      return digest;
    }
    await this.db.query({
      name: 'airlock-contents-put-ref',
      text: `WITH stored AS (
               INSERT INTO airlock_contents (digest, text) VALUES ($1, $2)
               ON CONFLICT (digest) DO UPDATE SET stored_at = now() RETURNING digest
             )
             INSERT INTO airlock_content_refs (digest, job_id) SELECT digest, $3 FROM stored
             ON CONFLICT (digest, job_id) DO UPDATE SET used_at = now()`,
      values: [digest, text, jobId],
    });
    return digest;
  }

  async prune(olderThanMs: number, running: (jobId: string) => Promise<boolean>): Promise<number> {
    const age = Math.round(olderThanMs);
    const idle = await this.db.query<{ job_id: string }>({
      name: 'airlock-contents-idle',
      text: `SELECT job_id FROM airlock_content_refs GROUP BY job_id HAVING MAX(used_at) < now() - ($1::bigint * interval '1 millisecond')`,
      values: [age],
    });
    let removed = 0;
    for (const { job_id: jobId } of idle.rows) {
      // Parked for long is not finished: asked again after another retention period.
      if (await running(jobId)) {
        await this.db.query({ name: 'airlock-contents-touch', text: 'UPDATE airlock_content_refs SET used_at = now() WHERE job_id = $1', values: [jobId] });
        continue;
      }
      const gone = await this.db.query({
        name: 'airlock-contents-prune',
        text: `WITH refs AS (DELETE FROM airlock_content_refs WHERE job_id = $1 RETURNING digest)
               DELETE FROM airlock_contents c USING refs
               WHERE c.digest = refs.digest AND c.stored_at < now() - ($2::bigint * interval '1 millisecond')
                 AND NOT EXISTS (SELECT 1 FROM airlock_content_refs r WHERE r.digest = c.digest AND r.job_id <> $1)`,
        values: [jobId, age],
      });
      removed += gone.rowCount ?? 0;
    }
    return removed;
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
