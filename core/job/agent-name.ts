import { z } from 'zod';

/**
 * An MCP agent's name: the requester of its job `mcp-<name>`, which rules
 * match and cards show, and the owner of its bearer token.
 */
export const agentNamePattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export const agentNameSchema = z.string().regex(agentNamePattern, 'an agent name is letters, digits, ".", "_" and "-" (at most 64), starting with a letter or digit');

export const agentNameRule = 'letters, digits, ".", "_" and "-" (at most 64)';
