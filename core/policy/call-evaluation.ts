import { z } from 'zod';
import { type CallFacts } from '../tools/facts';
import type { ToolCategory } from '../tools/registry';
import { detectorNames } from './detectors';
import { type JobScope, type RuleAction, ruleActions } from './rules';

/** What the policy decides for one call, and the shapes a call's evaluation is recorded in. */

/** What the gate decides for one call. */
export const gateDecisions = ['allow', 'audit_only', 'redirect', 'deny', 'require_approval', 'stop'] as const;
export type GateDecision = (typeof gateDecisions)[number];

/** Conflicting rule actions on one call resolve by this order, highest first. */
export const priority: Record<GateDecision, number> = {
  stop: 5,
  deny: 4,
  require_approval: 3,
  redirect: 2,
  audit_only: 1,
  allow: 0,
};

export function strongerDecision(a: GateDecision, b: GateDecision): GateDecision {
  return priority[b] > priority[a] ? b : a;
}

export const decisionForAction: Record<RuleAction, GateDecision> = {
  inject_instruction: 'redirect',
  deny_current_tool: 'deny',
  request_approval: 'require_approval',
  stop_task: 'stop',
  audit_only: 'audit_only',
  notify_admin: 'audit_only',
};

/** Observational actions: a repeat on the same call state is de-duplicated, not recorded again. */
export const observational: ReadonlySet<RuleAction> = new Set(['audit_only', 'notify_admin']);

export interface CallContext {
  readonly toolName: string;
  readonly category: ToolCategory;
  /** Arguments after schema parsing (defaults filled in). */
  readonly args: unknown;
  readonly scope: JobScope;
  /** The paths the call acts on, for the detectors. */
  readonly targets?: readonly string[];
  /** What the tools side saw of the targets (real paths, links, what exists). */
  readonly facts?: CallFacts | undefined;
  /** The call's state fingerprint (ungated), for de-duplicating observational rules. */
  readonly fingerprint?: string;
  /** The machine the call runs on, when the tools config lists several; rules may be scoped to machines. */
  readonly machine?: string;
  /** Facts were asked for this call and none came: detectors that need them assume the worst. */
  readonly factsMissing?: boolean;
}

/** Per-rule fire history of one job, kept in workflow state. */
export const ruleCountersSchema = z.record(
  z.string(),
  z.strictObject({ fires: z.number().int(), lastFiredAt: z.number(), lastFingerprint: z.string().optional() }),
);
export type RuleCounters = z.infer<typeof ruleCountersSchema>;

/** The judge's answer for one rule, or why there is none. */
export type JudgeVerdict = 'match' | 'no_match' | 'unknown' | 'failed';

export const ruleMatchSchema = z.strictObject({
  ruleId: z.string(),
  ruleVersion: z.number().int(),
  action: z.enum(ruleActions),
  decision: z.enum(gateDecisions),
  /** Shadow matches are audited and change nothing. */
  shadow: z.boolean(),
  /** Decided by the judge (a natural-language condition). */
  judged: z.boolean().optional(),
  /** Acting without a judge `match`: the failure table sent it to approval. */
  fallback: z.boolean().optional(),
  /** An observational rule that already fired on this exact call state. */
  duplicate: z.boolean().optional(),
});
export type RuleMatch = z.infer<typeof ruleMatchSchema>;

export const judgeCandidateSchema = z.strictObject({
  ruleId: z.string(),
  condition: z.string(),
  /** Whether a `match` may act (else the result is only audited). */
  enforced: z.boolean(),
});
export type JudgeCandidate = z.infer<typeof judgeCandidateSchema>;

export const callEvaluationSchema = z.strictObject({
  decision: z.enum(gateDecisions),
  /** Every matching rule, shadow ones included, in file order. */
  matches: z.array(ruleMatchSchema),
  /** The first rule (file order) whose action is the winning decision. */
  deciding: ruleMatchSchema.optional(),
  /** Registered instructions of the acting rules, highest priority first, without duplicates. */
  instructions: z.array(z.string()),
  /** Rules that matched but were held back by maxFires or cooldown. */
  limited: z.array(z.string()),
  /** Built-in detectors that fired while rules were checked. */
  detectors: z.array(z.enum(detectorNames)).default([]),
  /** Judged rules whose deterministic part holds and that wait for the judge. */
  judgeCandidates: z.array(judgeCandidateSchema).default([]),
});
export type CallEvaluation = z.output<typeof callEvaluationSchema>;
