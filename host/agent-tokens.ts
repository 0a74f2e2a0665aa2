import { createHash, randomBytes } from 'node:crypto';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import Database from 'better-sqlite3';
import { z } from 'zod';
import { agentNameSchema } from '../core/job/agent-name';
import { AirlockError } from '../core/util/errors';

/**
 * The bearer tokens of agents that call `airlock mcp --listen` over HTTP:
 * one active token per agent, shown once by `airlock agent add` and stored
 * only as its SHA-256 (a 256-bit random token needs no slow hash). A
 * request's token is found by its hash, so no secret is ever compared
 * byte by byte. Kept in the data folder (`SqliteAgentTokens`) or in the
 * shared database (`PostgresAgentTokens`), so every `airlock mcp` process
 * knows every agent.
 */
export interface AgentTokens {
  /** A new token for the agent, returned once; an `AgentTokenError` (`exists`) when the agent has an active one. */
  add(agent: string): Promise<{ readonly token: string; readonly createdAt: string }>;
  /** Revokes the agent's active token; how many were revoked (0: it had none). */
  revoke(agent: string): Promise<number>;
  /** Every token (active and revoked), by agent then age: never the token or its hash. */
  list(): Promise<AgentTokenInfo[]>;
  /** Whose token this is, and whether it still works. */
  lookup(token: string): Promise<TokenLookup>;
  /** Records that the token was used now. */
  markUsed(token: string): Promise<void>;
  close(): Promise<void>;
}

export const agentTokenInfoSchema = z.strictObject({
  agent: agentNameSchema,
  createdAt: z.string(),
  revokedAt: z.string().nullable(),
  lastUsedAt: z.string().nullable(),
});
export type AgentTokenInfo = z.infer<typeof agentTokenInfoSchema>;

export type TokenLookup =
  | { readonly kind: 'valid'; readonly agent: string }
  | { readonly kind: 'revoked'; readonly agent: string; readonly revokedAt: string }
  | { readonly kind: 'unknown' };

export class AgentTokenError extends AirlockError {
  override name = 'AgentTokenError';
  constructor(
    message: string,
    readonly reason: 'exists',
  ) {
    super(message);
  }
}

/** A prefix that says what the secret is, for people and for secret scanners. */
const PREFIX = 'airlock_agent_';
const tokenPattern = /^airlock_agent_[A-Za-z0-9_-]{43}$/;

/** A new token: 256 bits, base64url, after the prefix. */
export function newAgentToken(): string {
  return `${PREFIX}${randomBytes(32).toString('base64url')}`;
}

/** The token's hash, the only thing of it stored; undefined for a string that cannot be a token (it is then unknown without a lookup). */
export function agentTokenHash(token: string): string | undefined {
  return tokenPattern.test(token) ? createHash('sha256').update(token).digest('hex') : undefined;
}

export const tokenExists = (agent: string) =>
  new AgentTokenError(`agent ${agent} already has a token; revoke it first with \`airlock agent revoke ${agent}\`, then add a new one`, 'exists');

const rowSchema = z.strictObject({ agent: z.string(), created_at: z.string(), revoked_at: z.string().nullable(), last_used_at: z.string().nullable() });

function infoOf(row: unknown): AgentTokenInfo {
  const r = rowSchema.parse(row);
  return agentTokenInfoSchema.parse({ agent: r.agent, createdAt: r.created_at, revokedAt: r.revoked_at, lastUsedAt: r.last_used_at });
}

export function lookupOf(row: { agent: string; revokedAt: string | null } | undefined): TokenLookup {
  if (row === undefined) return { kind: 'unknown' };
  return row.revokedAt === null ? { kind: 'valid', agent: row.agent } : { kind: 'revoked', agent: row.agent, revokedAt: row.revokedAt };
}

/** Agent tokens in a SQLite file of the data folder (0600). */
export class SqliteAgentTokens implements AgentTokens {
  private readonly db: Database.Database;

  constructor(
    file: string,
    private readonly now: () => Date = () => new Date(),
  ) {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    // Created 0600 before SQLite opens it.
    closeSync(openSync(file, 'a', 0o600));
    this.db = new Database(file);
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('busy_timeout = 5000');
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
