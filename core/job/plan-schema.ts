import { z } from 'zod';
import { type CallEvaluation, type RuleCounters, callEvaluationSchema } from '../policy/call-evaluation';
import { ruleFireSchema } from '../policy/rule-fires';
import type { JobScope } from '../policy/rules';
import type { PolicySnapshot } from '../policy/snapshot';
import { type PreflightedCall, completeCallSchema, errorCallSchema, toolCallSchema } from './preflight';

/** What a batch becomes, as it is recorded and carried: each call's plan, the batch's outcome, and what planning reads. */

export const hex64 = z.string().regex(/^[0-9a-f]{64}$/);

/**
 * What happens to one call of a batch. The kind fixes the call's kind:
 * only tool calls run, park or stop; only `complete` completes.
 */
export const plannedCallSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('error'), call: errorCallSchema }),
  /** Accepted: the job completes once the rest of the batch has run. */
  z.strictObject({ kind: z.literal('complete'), call: completeCallSchema, evaluation: callEvaluationSchema.optional() }),
  /** A completion rule turns it down, once per rule and job; the model is told why. */
  z.strictObject({
    kind: z.literal('complete_rejected'),
    call: completeCallSchema,
    ruleIds: z.array(z.string()).min(1),
    message: z.string(),
    instructions: z.array(z.string()),
    evaluation: callEvaluationSchema,
  }),
  /** Not considered: the batch parks, re-plans or stops, or an earlier `complete` of the batch counts. */
  z.strictObject({ kind: z.literal('complete_held'), call: completeCallSchema, reason: z.enum(['held', 'duplicate']) }),
  z.strictObject({ kind: z.literal('run'), call: toolCallSchema, fingerprint: hex64, evaluation: callEvaluationSchema }),
  z.strictObject({
    kind: z.literal('deny'),
    call: toolCallSchema,
    ruleId: z.string().nullable(),
    fingerprint: hex64,
    message: z.string(),
    evaluation: callEvaluationSchema,
  }),
  z.strictObject({ kind: z.literal('redirect'), call: toolCallSchema, ruleId: z.string(), fingerprint: hex64, evaluation: callEvaluationSchema }),
  z.strictObject({
    kind: z.literal('approval'),
    call: toolCallSchema,
    ruleId: z.string(),
    ruleVersion: z.number().int(),
    fingerprint: hex64,
    evaluation: callEvaluationSchema,
  }),
  z.strictObject({ kind: z.literal('stop'), call: toolCallSchema, ruleId: z.string(), evaluation: callEvaluationSchema }),
]);
export type PlannedCall = z.infer<typeof plannedCallSchema>;
export type PlannedKind = PlannedCall['kind'];
export type Planned<K extends PlannedKind> = Extract<PlannedCall, { kind: K }>;

export const PLAN_SCHEMA_VERSION = 2 as const;

export const planFields = {
  schemaVersion: z.literal(PLAN_SCHEMA_VERSION),
  calls: z.array(plannedCallSchema),
  /** Merged, de-duplicated registered instructions for the one injected user message. */
  instructions: z.array(z.string()),
  /** Rule matches that acted (for fire counters and audit), with the call's state fingerprint. */
  fires: z.array(ruleFireSchema),
  /** Completion rules that turned `complete` down in this batch (each does so once per job). */
  completionRejections: z.array(z.string()),
};

/**
 * A batch's plan. Per batch: any stop ends the job (`stoppedBy` names the
 * rule); any approval parks it; any redirect re-plans; otherwise it runs.
 */
export const batchPlanSchema = z.discriminatedUnion('outcome', [
  z.strictObject({ ...planFields, outcome: z.literal('stop'), stoppedBy: z.string() }),
  z.strictObject({ ...planFields, outcome: z.literal('park') }),
  z.strictObject({ ...planFields, outcome: z.literal('redirect') }),
  z.strictObject({ ...planFields, outcome: z.literal('run') }),
]);
export type BatchPlan = z.infer<typeof batchPlanSchema>;

/** Durable per-job limits and memory that shape a batch's plan. */
export interface JobPolicyMemory {
  readonly deniedFingerprints: readonly string[];
  readonly redirectedFingerprints: readonly string[];
  readonly approvalRequests: number;
  readonly maxApprovalRequests: number;
  /** Completion rules that already turned `complete` down in this job. */
  readonly completionRuleFires: readonly string[];
}

/** A rule by id and version: what an approval covers. */
export interface RuleRef {
  readonly ruleId: string;
  readonly ruleVersion: number;
}

export interface PlanInput {
  readonly jobId: string;
  readonly scope: JobScope;
  readonly snapshot: PolicySnapshot;
  readonly calls: readonly PreflightedCall[];
  /** Evaluations of the `tool` calls at `tool.before`, by call id. */
  readonly evaluations: ReadonlyMap<string, CallEvaluation>;
  /** The calls' state fingerprints by call id, where the caller has them already (hashing a megabyte call costs). */
  readonly fingerprints?: ReadonlyMap<string, string>;
  readonly memory: JobPolicyMemory;
  readonly ruleCounters: RuleCounters;
  /** Workflow time, so cooldowns follow the job's clock. */
  readonly now: number;
}
