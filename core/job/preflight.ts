import { z } from 'zod';
import type { ToolCallRequest } from '../model/chat';
import { canonicalArgs, COMPLETE_TOOL, getTool, toolCategories } from '../tools/registry';

const argsRecord = z.record(z.string(), z.unknown());

export const errorCallSchema = z.strictObject({ callId: z.string(), toolName: z.string(), kind: z.literal('error'), message: z.string() });
export const completeCallSchema = z.strictObject({ callId: z.string(), toolName: z.string(), kind: z.literal('complete'), summary: z.string() });
export const toolCallSchema = z.strictObject({
  callId: z.string(),
  toolName: z.string(),
  kind: z.literal('tool'),
  category: z.enum(toolCategories),
  args: argsRecord,
});

/** A call after parsing and the basic checks, before policy. */
export const preflightedCallSchema = z.discriminatedUnion('kind', [errorCallSchema, completeCallSchema, toolCallSchema]);
export type PreflightedCall = z.infer<typeof preflightedCallSchema>;
export type ErrorCall = z.infer<typeof errorCallSchema>;
export type CompleteCall = z.infer<typeof completeCallSchema>;
/** A call of a registered, allowed tool with schema-checked, canonical arguments. */
export type ToolCall = z.infer<typeof toolCallSchema>;

function issuesText(issues: readonly z.core.$ZodIssue[]): string {
  return issues
    .slice(0, 5)
    .map((i) => `${i.path.length > 0 ? i.path.join('.') : '(arguments)'}: ${i.message}`)
    .join('; ');
}

/**
 * Parse → known → allowed → schema. A call that fails keeps an ordinary
 * error result; policy only sees calls that could run.
 */
export function preflight(
  call: ToolCallRequest,
  allowedTools: readonly string[],
  roots: readonly string[] = [],
): PreflightedCall {
  const base = { callId: call.id, toolName: call.name };
  let raw: unknown;
  try {
    raw = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
  } catch (err) {
    return { ...base, kind: 'error', message: `Error: the arguments are not valid JSON (${err instanceof Error ? err.message : String(err)}).` };
  }
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
    return { ...base, kind: 'error', message: 'Error: the arguments must be a JSON object.' };
  }
  const tool = getTool(call.name);
  if (tool === undefined) {
    return { ...base, kind: 'error', message: `Error: unknown tool ${JSON.stringify(call.name)}.` };
  }
  if (call.name !== COMPLETE_TOOL && !allowedTools.includes(call.name)) {
    return { ...base, kind: 'error', message: `Error: tool ${call.name} is not allowed for this job.` };
  }
  const parsed = tool.parameters.safeParse(raw);
  if (!parsed.success) return { ...base, kind: 'error', message: `Error: invalid arguments for ${call.name}: ${issuesText(parsed.error.issues)}.` };
  const args = argsRecord.parse(parsed.data);
  if (call.name === COMPLETE_TOOL) {
    return { ...base, kind: 'complete', summary: z.object({ summary: z.string() }).parse(args).summary };
  }
  const canonical = canonicalArgs(tool, args, roots);
  // Paths made absolute can break what held as written ("." moved into "sub/x" is the root moved into itself).
  const again = tool.parameters.safeParse(canonical);
  if (!again.success) return { ...base, kind: 'error', message: `Error: invalid arguments for ${call.name} (paths taken inside the allowed roots): ${issuesText(again.error.issues)}.` };
  return { ...base, kind: 'tool', category: tool.categoryOf(parsed.data), args: canonical };
}

/**
 * A model turn that decides its own calls (the gate inside the turn) carries
 * them twice in its result, as preflighted calls and in the plan; calls
 * larger than this in canonical JSON are decided by `evaluatePolicy` instead.
 */
export const MAX_TURN_GATED_CHARS = 64 * 1024;
