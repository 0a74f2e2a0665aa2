import { z } from 'zod';
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
});
export type UpstreamToolSpec = z.infer<typeof upstreamToolSpecSchema>;

/** The airlock name of an upstream tool; undefined when it cannot be one (too long once prefixed). */
export function upstreamToolName(server: string, tool: string): string | undefined {
  const name = `mcp_${server.replace(/-/g, '_')}_${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`;
  return UPSTREAM_TOOL_NAME.test(name) && name.length <= 64 ? name : undefined;
}

/**
 * The category an upstream's annotations imply. Only a declared read-only
 * tool reads; a tool that says nothing is taken to change things (so the
 * built-in rules ask a person); a tool declared destructive destroys data
 * as a delete does.
 */
export function upstreamCategory(annotations: UpstreamAnnotations): ToolCategory {
  if (annotations.readOnlyHint === true) return 'read';
  if (annotations.destructiveHint === true) return 'delete';
  return annotations.openWorldHint === true ? 'external_send' : 'file_change';
}
