import type { AirlockConfig } from '../../core/config/config';
import type { AuditSink } from '../../host/stores/audit-log/store';
import { type AgentTokens } from '../../host/stores/agent-tokens/store';
import { SqliteAgentTokens } from '../../host/stores/agent-tokens/sqlite';
import { statePaths } from '../../host/config/paths';

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
    // The audit log's module brings the Temporal SDK's failure types: loaded only by the server.
    const { JsonlAuditSink } = await import('../../host/stores/audit-log/jsonl');
    const tokens = new SqliteAgentTokens(statePaths(config).agentTokens);
    return { tokens, audit: new JsonlAuditSink(statePaths(config).audit), close: () => tokens.close() };
  }
  // Loaded only when a database is configured.
  const [{ openCheckedDatabase }, { PostgresAgentTokens }, { PostgresAuditLog }] = await Promise.all([
    import('../../host/stores/database/open'),
    import('../../host/stores/agent-tokens/postgres'),
    import('../../host/stores/audit-log/postgres'),
  ]);
  const db = await openCheckedDatabase(config.database, { applicationName, maxConnections: 2 });
  return { tokens: new PostgresAgentTokens(db), audit: new PostgresAuditLog(db), close: () => db.close() };
}

/** The agent tokens alone, for a short command (`airlock agent …`), closed after `use`. */
export async function withAgentTokens<T>(config: AirlockConfig, use: (tokens: AgentTokens) => Promise<T>): Promise<T> {
  let tokens: AgentTokens;
  let close: () => Promise<void>;
  if (config.database === undefined) {
    tokens = new SqliteAgentTokens(statePaths(config).agentTokens);
    close = () => tokens.close();
  } else {
    const [{ openCheckedDatabase }, { PostgresAgentTokens }] = await Promise.all([import('../../host/stores/database/open'), import('../../host/stores/agent-tokens/postgres')]);
    const db = await openCheckedDatabase(config.database, { applicationName: 'airlock-agent', maxConnections: 1 });
    tokens = new PostgresAgentTokens(db);
    close = () => db.close();
  }
  try {
    return await use(tokens);
  } finally {
    await close();
  }
}
