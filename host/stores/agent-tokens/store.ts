import { createHash, randomBytes } from 'node:crypto';
import { z } from 'zod';
import { agentNameSchema } from '../../../core/job/agent-name';
import { AirlockError } from '../../../core/util/errors';

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

export function lookupOf(row: { agent: string; revokedAt: string | null } | undefined): TokenLookup {
  if (row === undefined) return { kind: 'unknown' };
  return row.revokedAt === null ? { kind: 'valid', agent: row.agent } : { kind: 'revoked', agent: row.agent, revokedAt: row.revokedAt };
}
