import type { Database } from '../database/postgres';
import { agentTokenHash, agentTokenInfoSchema, lookupOf, newAgentToken, tokenExists, type AgentTokenInfo, type AgentTokens, type TokenLookup } from './store';
import { agentNameSchema } from '../../../core/job/agent-name';

const SELECT = `SELECT agent, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at,
  to_char(revoked_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS revoked_at,
  to_char(last_used_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS last_used_at FROM airlock_agent_tokens`;

function infoOf(row: Record<string, unknown>): AgentTokenInfo {
  return agentTokenInfoSchema.parse({ agent: row.agent, createdAt: row.created_at, revokedAt: row.revoked_at, lastUsedAt: row.last_used_at });
}

/**
 * Agent tokens in the shared database (`airlock_agent_tokens`), so that
 * `airlock agent add` on one machine and every `airlock mcp --listen`
 * process know the same agents. Only a token's hash is stored; one active
 * token per agent is the table's own constraint.
 */
export class PostgresAgentTokens implements AgentTokens {
  constructor(private readonly db: Database) {}

  async add(agent: string): Promise<{ readonly token: string; readonly createdAt: string }> {
    const name = agentNameSchema.parse(agent);
    const token = newAgentToken();
    const result = await this.db.query<{ created_at: string }>({
      name: 'airlock-agent-token-add',
      text: `INSERT INTO airlock_agent_tokens (token_hash, agent, created_at) VALUES ($1, $2, clock_timestamp())
             ON CONFLICT (agent) WHERE revoked_at IS NULL DO NOTHING
             RETURNING to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at`,
      values: [agentTokenHash(token), name],
    });
    const createdAt = result.rows[0]?.created_at;
    if (createdAt === undefined) throw tokenExists(name);
    return { token, createdAt };
  }

  async revoke(agent: string): Promise<number> {
    const result = await this.db.query({
      name: 'airlock-agent-token-revoke',
      text: 'UPDATE airlock_agent_tokens SET revoked_at = clock_timestamp() WHERE agent = $1 AND revoked_at IS NULL',
      values: [agent],
    });
    return result.rowCount ?? 0;
  }

  async list(): Promise<AgentTokenInfo[]> {
    const result = await this.db.query({ name: 'airlock-agent-token-list', text: `${SELECT} ORDER BY agent, created_at` });
    return result.rows.map(infoOf);
  }

  async lookup(token: string): Promise<TokenLookup> {
    const hash = agentTokenHash(token);
    if (hash === undefined) return { kind: 'unknown' };
    const result = await this.db.query({ name: 'airlock-agent-token-lookup', text: `${SELECT} WHERE token_hash = $1`, values: [hash] });
    const row = result.rows[0];
    return lookupOf(row === undefined ? undefined : infoOf(row));
  }

  async markUsed(token: string): Promise<void> {
    const hash = agentTokenHash(token);
    if (hash === undefined) return;
    await this.db.query({ name: 'airlock-agent-token-used', text: 'UPDATE airlock_agent_tokens SET last_used_at = clock_timestamp() WHERE token_hash = $1', values: [hash] });
  }

  async close(): Promise<void> {
    // The database belongs to the process.
  }
}
