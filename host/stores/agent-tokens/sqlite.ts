import type Database from 'better-sqlite3';
import { agentNameSchema } from '../../../core/job/agent-name';
import { z } from 'zod';
import { openSqlite } from '../database/sqlite';
import { type AgentTokenInfo, type AgentTokens, type TokenLookup, agentTokenHash, agentTokenInfoSchema, lookupOf, newAgentToken, tokenExists } from './store';

const rowSchema = z.strictObject({ agent: z.string(), created_at: z.string(), revoked_at: z.string().nullable(), last_used_at: z.string().nullable() });

function infoOf(row: unknown): AgentTokenInfo {
  const r = rowSchema.parse(row);
  return agentTokenInfoSchema.parse({ agent: r.agent, createdAt: r.created_at, revokedAt: r.revoked_at, lastUsedAt: r.last_used_at });
}


/** Agent tokens in a SQLite file of the data folder (0600). */
export class SqliteAgentTokens implements AgentTokens {
  private readonly db: Database.Database;

  constructor(
    file: string,
    private readonly now: () => Date = () => new Date(),
  ) {
    this.db = openSqlite(file);
    this.db.exec(`CREATE TABLE IF NOT EXISTS agent_tokens (
      token_hash TEXT PRIMARY KEY,
      agent TEXT NOT NULL,
      created_at TEXT NOT NULL,
      revoked_at TEXT,
      last_used_at TEXT
    )`);
    // One active token per agent, whichever process adds it.
    this.db.exec('CREATE UNIQUE INDEX IF NOT EXISTS agent_tokens_active ON agent_tokens (agent) WHERE revoked_at IS NULL');
  }

  async add(agent: string): Promise<{ readonly token: string; readonly createdAt: string }> {
    const name = agentNameSchema.parse(agent);
    const token = newAgentToken();
    const createdAt = this.now().toISOString();
    try {
      this.db.prepare('INSERT INTO agent_tokens (token_hash, agent, created_at) VALUES (?, ?, ?)').run(agentTokenHash(token), name, createdAt);
    } catch (err) {
      // By code, not class: the native module keeps the error class of whoever loaded it first (test runners load it again).
      if (typeof err === 'object' && err !== null && 'code' in err && err.code === 'SQLITE_CONSTRAINT_UNIQUE') throw tokenExists(name);
      throw err;
    }
    return { token, createdAt };
  }

  async revoke(agent: string): Promise<number> {
    return this.db.prepare('UPDATE agent_tokens SET revoked_at = ? WHERE agent = ? AND revoked_at IS NULL').run(this.now().toISOString(), agent).changes;
  }

  async list(): Promise<AgentTokenInfo[]> {
    return this.db.prepare('SELECT agent, created_at, revoked_at, last_used_at FROM agent_tokens ORDER BY agent, created_at').all().map(infoOf);
  }

  async lookup(token: string): Promise<TokenLookup> {
    const hash = agentTokenHash(token);
    if (hash === undefined) return { kind: 'unknown' };
    const row = this.db.prepare('SELECT agent, created_at, revoked_at, last_used_at FROM agent_tokens WHERE token_hash = ?').get(hash);
    return lookupOf(row === undefined ? undefined : infoOf(row));
  }

  async markUsed(token: string): Promise<void> {
    const hash = agentTokenHash(token);
    if (hash !== undefined) this.db.prepare('UPDATE agent_tokens SET last_used_at = ? WHERE token_hash = ?').run(this.now().toISOString(), hash);
  }

  async close(): Promise<void> {
    this.db.close();
  }
}
