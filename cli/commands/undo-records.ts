import { existsSync } from 'node:fs';
import type { AirlockConfig } from '../../core/config/config';
import { statePaths } from '../../host/config/paths';
import type { UndoRecord } from '../../host/stores/nonces/undo-records';
import { describeError } from '../../core/temporal/describe-error';
import { JobError } from '../../client/errors';

/**
 * What `airlock undo --list` reads: the held undo records in the store the
 * tools workers keep them in, the shared database when one is configured,
 * else this machine's data folder (where the tools worker runs). Records
 * keep paths only as digests: the list names each change by its job and
 * call, as `airlock undo` takes them.
 */
export async function heldUndoRecords(config: AirlockConfig, options: { readonly jobId?: string; readonly limit: number }): Promise<UndoRecord[]> {
  const query = { state: 'held' as const, limit: options.limit, ...(options.jobId !== undefined ? { jobId: options.jobId } : {}) };
  if (config.database === undefined) {
    const file = statePaths(config).nonces;
    // Opening a missing store would make a new, empty one: say where the records are instead.
    if (!existsSync(file)) throw new JobError(`no undo records here: ${file} does not exist (run this where the tools worker runs, with its AIRLOCK_DATA_DIR, or configure the shared database)`);
    const { SqliteNonceStore } = await import('../../host/stores/nonces/sqlite');
    let store: InstanceType<typeof SqliteNonceStore>;
    try {
      store = new SqliteNonceStore(file);
    } catch (err) {
      throw new JobError(`cannot open the undo records in ${file} (${describeError(err)}); run this as the user the tools worker runs as`);
    }
    try {
      return await store.undoRecords(query);
    } finally {
      await store.close();
    }
  }
  const [{ openCheckedDatabase }, { PostgresNonceStore }] = await Promise.all([import('../../host/stores/database/open'), import('../../host/stores/nonces/postgres')]);
  const db = await openCheckedDatabase(config.database, { applicationName: 'airlock-undo', maxConnections: 1 });
  try {
    return await (await PostgresNonceStore.open(db)).undoRecords(query);
  } finally {
    await db.close();
  }
}
