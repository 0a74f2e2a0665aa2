import type { DatabaseConfig } from '../../../core/config/config';
import { requireSchema } from './migrations';
import { Database } from './postgres';

/**
 * The configured database, its schema checked: refused, in one line naming
 * both versions and what to run, when it is not the one this build knows
 * (the pool is closed again then). Workers, the CLI and the approval page
 * all open it this way.
 */
export async function openCheckedDatabase(
  settings: DatabaseConfig,
  options: { readonly applicationName: string; readonly maxConnections?: number },
): Promise<Database> {
  const db = Database.open(settings.url, {
    setting: settings.setting,
    maxConnections: options.maxConnections ?? settings.poolSize,
    statementTimeoutMs: settings.statementTimeoutMs,
    applicationName: options.applicationName,
  });
  try {
    await requireSchema(db);
  } catch (err) {
    await db.close().catch(() => undefined);
    throw err;
  }
  return db;
}
