import { z } from 'zod';
import { UPSTREAM_TOOL_NAME, upstreamServerNameSchema } from '../../tools/upstream/upstream-spec';

/**
 * `mcp:` in the tools config: upstream MCP servers whose tools airlock
 * gates. The tools worker starts each `command` (or connects to each
 * `url`) and lends the tools `tools` lists, as `mcp_<server>_<tool>`; a
 * tool not listed is never offered, and a call to it is refused before
 * the server hears of it.
 */

const envName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,99}$/, 'expected an environment variable name such as API_KEY');
const headerName = z.string().regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,100}$/, 'expected an HTTP header name such as Authorization');

/**
 * Whether the server's tool annotations are believed: only then is a tool
 * it declares read-only (`readOnlyHint`) run as a read, without a person.
 * Annotations are hints a server chooses; the MCP specification says a
 * client must not trust them from a server it does not trust. Default:
 * not trusted, so every tool of the server is a change the rules gate.
 */
const trustAnnotations = z.boolean().optional();

export const mcpServerSchema = z.union([
  z.strictObject({
    /** The program and its arguments, run without a shell. */
    command: z.array(z.string().min(1)).min(1, 'expected the program and its arguments, e.g. [npx, -y, @modelcontextprotocol/server-filesystem, /srv/share]'),
    /** Added to a small environment (PATH, HOME): the worker's own secrets are not passed on. */
    env: z.record(envName, z.string()).optional(),
    trustAnnotations,
  }),
  z.strictObject({
    url: z.url({ protocol: /^https?$/, error: 'expected an http:// or https:// URL of the server\'s MCP endpoint' }),
    headers: z.record(headerName, z.string().max(8192)).optional(),
    trustAnnotations,
  }),
]);
export type McpServerConfig = z.output<typeof mcpServerSchema>;

export const mcpConfigSchema = z
  .strictObject({
    servers: z.record(upstreamServerNameSchema, mcpServerSchema, {
      error: (issue) => (issue.code === 'invalid_key' ? `${JSON.stringify(issue.input)}: expected a server name of lowercase letters, digits and "-" (at most 20), e.g. files` : undefined),
    }),
    /** The tools lent, by their airlock names; nothing else of a server is offered. */
    tools: z.array(z.string().regex(UPSTREAM_TOOL_NAME, 'expected a tool name such as mcp_files_write_file (mcp_<server>_<tool>)')).min(1, 'list the tools to lend, e.g. mcp_files_read_text_file'),
  })
  .superRefine((c, ctx) => {
    const prefixes = Object.keys(c.servers).map((s) => `mcp_${s.replace(/-/g, '_')}_`);
    c.tools.forEach((name, i) => {
      if (!prefixes.some((p) => name.startsWith(p))) ctx.addIssue({ code: 'custom', path: ['tools', i], message: `${name} names none of the servers listed (${Object.keys(c.servers).join(', ')})` });
    });
  });
export type McpConfig = z.output<typeof mcpConfigSchema>;
