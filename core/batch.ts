import { z } from 'zod';
import type { ToolCallRequest } from './chat';
import { callFingerprint, stateFingerprint } from './fingerprint';
import {
  batchOutcome,
  callEvaluationSchema,
  ruleFireSchema,
  type CallEvaluation,
  type GateDecision,
  type JobScope,
  type RuleFire,
} from './policy/evaluate';
import type { PolicySnapshot } from './policy/snapshot';
import { canonicalArgs, COMPLETE_TOOL, getTool, toolCategories } from './tools/definitions';

const argsRecord = z.record(z.string(), z.unknown());

/** A call after parsing and the basic checks, before policy. */
export const preflightedCallSchema = z.discriminatedUnion('kind', [
  z.strictObject({ callId: z.string(), toolName: z.string(), kind: z.literal('error'), message: z.string() }),
  z.strictObject({ callId: z.string(), toolName: z.string(), kind: z.literal('complete'), summary: z.string() }),
  z.strictObject({
    callId: z.string(),
    toolName: z.string(),
    kind: z.literal('tool'),
    category: z.enum(toolCategories),
    args: argsRecord,
  }),
]);
export type PreflightedCall = z.infer<typeof preflightedCallSchema>;

export type ToolPreflight = Extract<PreflightedCall, { kind: 'tool' }>;

/**
 * Parse → known → allowed → schema. A call that fails keeps an ordinary
 * error result; policy only sees calls that could run.
 */
export function preflight(call: ToolCallRequest, allowedTools: readonly string[], roots: readonly string[] = []): PreflightedCall {
  const base = { callId: call.id, toolName: call.name };
  let raw: unknown;
  try {
    raw = call.arguments.trim() === '' ? {} : JSON.parse(call.arguments);
  } catch (err) {
    return { ...base, kind: 'error', message: `Error: the arguments are not valid JSON (${(err as Error).message}).` };
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
  if (!parsed.success) {
    const detail = parsed.error.issues
      .slice(0, 5)
      .map((i) => `${i.path.length > 0 ? i.path.join('.') : '(arguments)'}: ${i.message}`)
      .join('; ');
    return { ...base, kind: 'error', message: `Error: invalid arguments for ${call.name}: ${detail}.` };
  }
  if (call.name === COMPLETE_TOOL) {
    return { ...base, kind: 'complete', summary: (parsed.data as { summary: string }).summary };
  }
  return { ...base, kind: 'tool', category: tool.category, args: canonicalArgs(tool, parsed.data as Record<string, unknown>, roots) };
}

const hex64 = z.string().regex(/^[0-9a-f]{64}$/);

/** What happens to one call of a batch. */
export const callFateSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('error'), message: z.string() }),
  z.strictObject({ kind: z.literal('complete'), summary: z.string() }),
  z.strictObject({ kind: z.literal('run'), fingerprint: hex64 }),
  z.strictObject({ kind: z.literal('deny'), message: z.string(), ruleId: z.string().nullable(), fingerprint: hex64 }),
  z.strictObject({ kind: z.literal('redirect'), ruleId: z.string(), fingerprint: hex64 }),
  z.strictObject({ kind: z.literal('approval'), ruleId: z.string(), ruleVersion: z.number().int(), fingerprint: hex64 }),
  z.strictObject({ kind: z.literal('stop'), ruleId: z.string() }),
]);
export type CallFate = z.infer<typeof callFateSchema>;

export const plannedCallSchema = z.strictObject({
  call: preflightedCallSchema,
  fate: callFateSchema,
  evaluation: callEvaluationSchema.optional(),
});
export type PlannedCall = z.infer<typeof plannedCallSchema>;

export const batchPlanSchema = z.strictObject({
  outcome: z.enum(['stop', 'park', 'redirect', 'run']),
  calls: z.array(plannedCallSchema),
  /** Merged, de-duplicated registered instructions for the one injected user message. */
  instructions: z.array(z.string()),
  /** Rule matches that acted (for fire counters and audit), with the call's state fingerprint. */
  fires: z.array(ruleFireSchema),
});
export type BatchPlan = z.infer<typeof batchPlanSchema>;

/** Durable per-job limits and memory that shape a batch's plan. */
export interface JobPolicyMemory {
  readonly deniedFingerprints: readonly string[];
  readonly redirectedFingerprints: readonly string[];
  readonly approvalRequests: number;
  readonly maxApprovalRequests: number;
}

export interface PlanInput {
  readonly jobId: string;
  readonly scope: JobScope;
  readonly snapshot: PolicySnapshot;
  readonly calls: readonly PreflightedCall[];
  /** Evaluations of the `tool` calls, by call id. */
  readonly evaluations: ReadonlyMap<string, CallEvaluation>;
  readonly memory: JobPolicyMemory;
}


/**
 * Turns per-call evaluations into the batch plan: per-job memory first
 * (a denied fingerprint is never requested again; the same redirect twice
 * becomes a deny; the approval budget), then the batch outcome.
 */
export function planBatch(input: PlanInput): BatchPlan {
  let approvalsLeft = input.memory.maxApprovalRequests - input.memory.approvalRequests;
  const fires: RuleFire[] = [];
  const planned: PlannedCall[] = input.calls.map((call) => {
    if (call.kind === 'error') return { call, fate: { kind: 'error', message: call.message } };
    if (call.kind === 'complete') return { call, fate: { kind: 'complete', summary: call.summary } };
    const evaluation = input.evaluations.get(call.callId);
    if (evaluation === undefined) throw new Error(`no policy evaluation for call ${call.callId}`);
    const state = stateFingerprint(input.jobId, input.scope, call);
    fires.push(...evaluation.matches.filter((m) => !m.shadow && m.duplicate !== true).map((m) => ({ ...m, stateFingerprint: state })));
    const fingerprintFor = (ruleId: string | null, ruleVersion: number | null) =>
      callFingerprint({
        jobId: input.jobId,
        scope: input.scope,
        toolName: call.toolName,
        normalizedArgs: call.args,
        ruleId,
        ruleVersion,
      });
    const fate = (f: CallFate): PlannedCall => ({ call, evaluation, fate: f });
    if (evaluation.decision === 'allow' || evaluation.decision === 'audit_only') {
      return fate({ kind: 'run', fingerprint: state });
    }
    // Every other decision comes from a rule that acted.
    const rule = evaluation.deciding!;
    const fingerprint = fingerprintFor(rule.ruleId, rule.ruleVersion);
    const deny = (why: string) => fate({ kind: 'deny', ruleId: rule.ruleId, fingerprint, message: `Not executed: ${why}` });
    switch (evaluation.decision) {
      case 'stop':
        return fate({ kind: 'stop', ruleId: rule.ruleId });
      case 'deny': {
        const instruction = evaluation.instructions[0];
        return deny(`policy rule ${rule.ruleId} denies this call.${instruction !== undefined ? ` ${instruction}` : ''}`);
      }
      case 'redirect':
        if (input.memory.redirectedFingerprints.includes(fingerprint)) {
          return deny(`policy rule ${rule.ruleId} already asked you to re-plan this exact call; repeating it unchanged is denied.`);
        }
        return fate({ kind: 'redirect', ruleId: rule.ruleId, fingerprint });
      case 'require_approval':
        if (input.memory.deniedFingerprints.includes(fingerprint)) {
          return deny('this exact call was denied earlier in this job and will not be requested again. Choose a different approach.');
        }
        if (approvalsLeft <= 0) {
          return deny(`this job reached its limit of ${input.memory.maxApprovalRequests} approval requests.`);
        }
        approvalsLeft--;
        return fate({ kind: 'approval', ruleId: rule.ruleId, ruleVersion: rule.ruleVersion, fingerprint });
    }
  });
  const decisions: GateDecision[] = planned.map(({ fate }) => {
    switch (fate.kind) {
      case 'stop':
        return 'stop';
      case 'approval':
        return 'require_approval';
      case 'redirect':
        return 'redirect';
      case 'deny':
        return 'deny';
      default:
        return 'allow';
    }
  });
  const instructions: string[] = [];
  for (const p of planned) {
    if (p.fate.kind !== 'redirect') continue;
    for (const text of p.evaluation?.instructions ?? []) if (!instructions.includes(text)) instructions.push(text);
  }
  return { outcome: batchOutcome(decisions), calls: planned, instructions, fires };
}

/** The injected user message after a redirect: registered texts only, never model-written. */
export function instructionMessage(instructions: readonly string[]): string {
  return [
    'Policy instructions (registered rules) apply to your last tool calls, which were not executed:',
    ...instructions.map((text, i) => `${i + 1}. ${text}`),
    'Follow them, then make new tool calls.',
  ].join('\n');
}
