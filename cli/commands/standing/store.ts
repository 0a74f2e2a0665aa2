import { randomUUID } from 'node:crypto';
import type { AirlockConfig } from '../../../core/config/config';
import { sanitizeAuditEvent } from '../../../core/audit/events';
import { statePaths } from '../../../host/config/paths';
import type { AuditSink } from '../../../host/stores/audit-log/store';
import type { StandingApprovals } from '../../../host/stores/standing-approvals/store';

export interface StandingStores {
  readonly standing: StandingApprovals;
  /** Where a revocation is audited: the agent side's audit log. */
  readonly audit: AuditSink;
}

/**
 * The standing approvals as the agent workers keep them: the shared
 * database when one is configured, else the data folder's SQLite file;
 * closed after `use`.
 */
export async function withStandingStores<T>(config: AirlockConfig, use: (stores: StandingStores) => Promise<T>): Promise<T> {
  let stores: StandingStores;
  let close: () => Promise<void>;
  if (config.database === undefined) {
    const [{ SqliteStandingApprovals }, { JsonlAuditSink }] = await Promise.all([import('../../../host/stores/standing-approvals/sqlite'), import('../../../host/stores/audit-log/jsonl')]);
    const standing = new SqliteStandingApprovals(statePaths(config).standingApprovals);
    stores = { standing, audit: new JsonlAuditSink(statePaths(config).audit) };
    close = () => standing.close();
  } else {
    const [{ openCheckedDatabase }, { PostgresStandingApprovals }, { PostgresAuditLog }] = await Promise.all([
      import('../../../host/stores/database/open'),
      import('../../../host/stores/standing-approvals/postgres'),
      import('../../../host/stores/audit-log/postgres'),
    ]);
    const db = await openCheckedDatabase(config.database, { applicationName: 'airlock-cli', maxConnections: 1 });
    stores = { standing: new PostgresStandingApprovals(db), audit: new PostgresAuditLog(db) };
    close = () => db.close();
  }
  try {
    return await use(stores);
  } finally {
    await close();
  }
}

/** The audit event of a revocation from the CLI (no job wrote it: its job id is the approval's origin job). */
export async function auditRevocation(audit: AuditSink, input: { readonly jobId: string; readonly standingId: string; readonly by: string; readonly reason: string }): Promise<void> {
  await audit.write([
    sanitizeAuditEvent({
      type: 'standing_revoked',
      jobId: input.jobId,
      at: new Date().toISOString(),
      policyVersion: undefined,
      eventId: randomUUID(),
      data: { standingId: input.standingId, by: input.by, reason: input.reason },
    }),
  ]);
}
