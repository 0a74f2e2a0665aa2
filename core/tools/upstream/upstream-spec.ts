import { z } from 'zod';
import { canonicalJson } from '../../util/canonical-json';
import { sha256Hex } from '../../util/sha256';
import type { ToolCategory } from '../tool-module';

/**
 * A tool of an upstream MCP server as airlock offers it: its airlock name
 * (`mcp_<server>_<tool>`), where it comes from, the upstream's JSON Schema
 * and annotations as listed. Frozen into a job's policy snapshot, so the
 * workflow validates and classifies a call the same way on every replay.
 */

/** A server's name in the tools config: part of every tool name it lends. */
export const upstreamServerNameSchema = z
  .string()
  .regex(/^[a-z][a-z0-9-]{0,19}$/, 'expected a server name of lowercase letters, digits and "-" (at most 20), e.g. files');

/** Names function calling accepts: letters, digits, `_` and `-`, at most 64. */
export const UPSTREAM_TOOL_NAME = /^mcp_[A-Za-z0-9_-]{1,60}$/;

export const upstreamAnnotationsSchema = z.object({
  readOnlyHint: z.boolean().optional(),
  destructiveHint: z.boolean().optional(),
  idempotentHint: z.boolean().optional(),
  openWorldHint: z.boolean().optional(),
});
export type UpstreamAnnotations = z.infer<typeof upstreamAnnotationsSchema>;

/** The largest input schema kept for one tool (an upstream lists its own; a huge one is refused at start). */
export const MAX_UPSTREAM_SCHEMA_CHARS = 64 * 1024;

export const upstreamToolSpecSchema = z.strictObject({
  schemaVersion: z.literal(1),
  /** The name jobs, rules and clients use. */
  name: z.string().regex(UPSTREAM_TOOL_NAME),
  server: upstreamServerNameSchema,
  /** The upstream's own name for it. */
  tool: z.string().min(1).max(200),
  description: z.string().max(4000),
  inputSchema: z.record(z.string(), z.unknown()),
  annotations: upstreamAnnotationsSchema,
  /**
   * Whether its server's annotations are believed (`trustAnnotations: true`
   * on the server in the tools config). Absent (not trusted, and specs from
   * before): a read-only hint is never taken, so the tool is a change.
   */
  trustAnnotations: z.boolean().optional(),
  /**
   * `definitionDigest` of the tool as listed when the spec was made (absent
   * in specs from before): a job's grants bind it, and the tools worker
   * sends a call only while its server lists the tool with this very
   * definition, the one the job's rules judged.
   */
  definition: z.string().regex(/^[0-9a-f]{64}$/).optional(),
});

/** What a grant binds of a call's tool: an upstream tool's definition digest as a job's snapshot holds it; nothing for any other tool, or a spec from before. */
export function definitionClaim(specs: readonly UpstreamToolSpec[] | undefined, toolName: string): { readonly definition?: string } {
  const definition = specs?.find((s) => s.name === toolName)?.definition;
  return definition === undefined ? {} : { definition };
}
export type UpstreamToolSpec = z.infer<typeof upstreamToolSpecSchema>;

/** The airlock name of an upstream tool; undefined when it cannot be one (too long once prefixed). */
export function upstreamToolName(server: string, tool: string): string | undefined {
  const name = `mcp_${server.replace(/-/g, '_')}_${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  return UPSTREAM_TOOL_NAME.test(name) && name.length <= 64 ? name : undefined;
}

/**
 * The category of an upstream tool. Annotations are hints a client must not
 * trust from a server it does not trust (MCP specification), so a hint is
 * taken only where it asks for more care: a tool declared destructive
 * destroys data as a delete does, an open-world one sends outside (whatever
 * else each declares: the more dangerous hint wins); and a read-only hint
 * makes a read only on a server the tools config trusts. Anything else
 * is taken to change things, so the built-in rules ask a person.
 */
export function upstreamCategory(spec: Pick<UpstreamToolSpec, 'annotations' | 'trustAnnotations'>): ToolCategory {
  const hints = spec.annotations;
  if (hints.destructiveHint === true) return 'delete';
  // Open world: it reaches outside, to a place airlock cannot see (a read-only fetch can still carry data out in its URL).
  if (hints.openWorldHint === true) return 'external_send';
  return hints.readOnlyHint === true && spec.trustAnnotations === true ? 'read' : 'file_change';
}

/** What an upstream lists of one tool, as its definition digest covers it. */
export interface ListedTool {
  readonly name: string;
  readonly description?: string | undefined;
  readonly inputSchema: unknown;
  readonly annotations?: unknown;
}

/**
 * sha256 of a tool's definition as its server lists it (name, description,
 * input schema, annotations, canonical JSON): a call approved for one
 * definition is never sent to another under the same name.
 */
export function definitionDigest(tool: ListedTool): string {
  return sha256Hex(canonicalJson({ name: tool.name, description: tool.description ?? '', inputSchema: tool.inputSchema ?? null, annotations: tool.annotations ?? null }));
}
