import type { AirlockConfig } from '../../core/config/config';
import { JsonlAuditSink, type AuditSink } from '../../host/audit-log';
import { SqliteAgentTokens, type AgentTokens } from '../../host/agent-tokens';
import { statePaths } from '../../host/paths';

export interface McpStores {
  readonly tokens: AgentTokens;
  /** Where refusals of `airlock mcp --listen` are audited: the agent side's audit log. */
  readonly audit: AuditSink;
  close(): Promise<void>;
}

/**
 * Agent tokens and the audit log as the workers keep them: the shared
 * database when one is configured (every `airlock mcp` process knows
 * every agent, and refusals land beside the jobs' events), else the data
 * folder's SQLite file and JSONL log.
 */
export async function openMcpStores(config: AirlockConfig, applicationName: string): Promise<McpStores> {
  if (config.database === undefined) {
    const tokens = new SqliteAgentTokens(statePaths(config).agentTokens);
    return { tokens, audit: new JsonlAuditSink(statePaths(config).audit), close: () => tokens.close() };
  }
  // Loaded only when a database is configured.
  const [{ openCheckedDatabase }, { PostgresAgentTokens }, { PostgresAuditLog }] = await Promise.all([
    import('../../host/database/open'),
    import('../../host/postgres-agent-tokens'),
    import('../../host/postgres-audit-log'),
  ]);
  const db = await openCheckedDatabase(config.database, { applicationName, maxConnections: 2 });
  return { tokens: new PostgresAgentTokens(db), audit: new PostgresAuditLog(db), close: () => db.close() };
}

/** The stores for a short command (`airlock agent …`), closed after `use`. */
export async function withMcpStores<T>(config: AirlockConfig, use: (stores: McpStores) => Promise<T>): Promise<T> {
  const stores = await openMcpStores(config, 'airlock-agent');
  try {
    return await use(stores);
  } finally {
    await stores.close();
  }
}
