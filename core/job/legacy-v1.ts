import { z } from 'zod';
import type { ApprovalRequest } from '../approval/approvals';
import { withOutcome } from './batch-plan';
import { type BatchPlan, type PlannedCall } from './plan-schema';
import { observedStateSchema } from '../tools/observed-state';
import { ruleFireSchema } from '../policy/rule-fires';
import { callEvaluationSchema, type CallEvaluation } from '../policy/call-evaluation';
import { preflightedCallSchema } from './preflight';

/**
 * Shapes written by builds before the reshaped job (schema version 1):
 * carried state of jobs that continued as new, and plans recorded in the
 * markers of their policy evaluations. Kept only to read them; everything
 * new is written in the current shapes.
 */

const hex64 = z.string().regex(/^[0-9a-f]{64}$/);
const argsRecord = z.record(z.string(), z.unknown());

const fateV1Schema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('error'), message: z.string() }),
  z.strictObject({ kind: z.literal('complete'), summary: z.string() }),
  z.strictObject({ kind: z.literal('run'), fingerprint: hex64 }),
  z.strictObject({ kind: z.literal('deny'), message: z.string(), ruleId: z.string().nullable(), fingerprint: hex64 }),
  z.strictObject({ kind: z.literal('redirect'), ruleId: z.string(), fingerprint: hex64 }),
  z.strictObject({ kind: z.literal('approval'), ruleId: z.string(), ruleVersion: z.number().int(), fingerprint: hex64 }),
  z.strictObject({ kind: z.literal('stop'), ruleId: z.string() }),
]);

const plannedV1Schema = z.strictObject({ call: preflightedCallSchema, fate: fateV1Schema, evaluation: callEvaluationSchema.optional() });

export const batchPlanV1Schema = z.strictObject({
  outcome: z.enum(['stop', 'park', 'redirect', 'run']),
  calls: z.array(plannedV1Schema),
  instructions: z.array(z.string()),
  fires: z.array(ruleFireSchema),
});

export const approvalRequestV1Schema = z.strictObject({
  requestId: z.string().min(1),
  callId: z.string().min(1),
  toolName: z.string(),
  args: argsRecord,
  fingerprint: hex64,
  nonce: z.string().regex(/^[0-9a-f]{32}$/),
  ruleId: z.string(),
  ruleVersion: z.number().int(),
  reason: z.string(),
  editable: z.array(z.string()),
  reviewers: z.array(z.string()).nullable(),
  separateRequester: z.boolean(),
  signatureRequired: z.boolean(),
  requester: z.string(),
  observed: z.array(observedStateSchema),
  createdAt: z.number(),
  expiresAt: z.number(),
  status: z.enum(['pending', 'approved', 'denied', 'expired']),
  decision: z
    .strictObject({
      decision: z.enum(['approve', 'deny']),
      reviewer: z.string(),
      reason: z.string().nullable(),
      decidedAt: z.number(),
      editedArgs: argsRecord.nullable(),
      editedFingerprint: hex64.nullable(),
    })
    .nullable(),
});

/** A shape that cannot be carried forward; the message says which part. */
export class LegacyShapeError extends Error {
  override name = 'LegacyShapeError';
}

export function requestFromV1(raw: z.infer<typeof approvalRequestV1Schema>): ApprovalRequest {
  const { status, decision, ...base } = raw;
  switch (status) {
    case 'pending':
    case 'expired':
      return { ...base, status };
    case 'approved':
      if (decision?.decision !== 'approve') throw new LegacyShapeError(`request ${raw.requestId} is approved without an approval`);
      return { ...base, status, decision: { ...decision, decision: 'approve' } };
    case 'denied':
      if (decision?.decision !== 'deny') throw new LegacyShapeError(`request ${raw.requestId} is denied without a denial`);
      return { ...base, status, decision: { decision: 'deny', reviewer: decision.reviewer, reason: decision.reason, decidedAt: decision.decidedAt } };
  }
}

function plannedFromV1(p: z.infer<typeof plannedV1Schema>): PlannedCall {
  const { call, fate, evaluation } = p;
  const where = `call ${call.callId} (${fate.kind})`;
  if (fate.kind === 'error') {
    if (call.kind !== 'error') throw new LegacyShapeError(`${where}: an error fate on a ${call.kind} call`);
    return { kind: 'error', call };
  }
  if (fate.kind === 'complete') {
    if (call.kind !== 'complete') throw new LegacyShapeError(`${where}: a complete fate on a ${call.kind} call`);
    // Recorded plans that still waited (parked, re-planned) never accepted their `complete`.
    return { kind: 'complete_held', call, reason: 'held' };
  }
  if (call.kind !== 'tool' || evaluation === undefined) throw new LegacyShapeError(`${where}: a tool fate without a tool call and its evaluation`);
  switch (fate.kind) {
    case 'run':
      return { kind: 'run', call, fingerprint: fate.fingerprint, evaluation };
    case 'deny':
      return { kind: 'deny', call, ruleId: fate.ruleId, fingerprint: fate.fingerprint, message: fate.message, evaluation };
    case 'redirect':
      return { kind: 'redirect', call, ruleId: fate.ruleId, fingerprint: fate.fingerprint, evaluation };
    case 'approval':
      return { kind: 'approval', call, ruleId: fate.ruleId, ruleVersion: fate.ruleVersion, fingerprint: fate.fingerprint, evaluation };
    case 'stop':
      return { kind: 'stop', call, ruleId: fate.ruleId, evaluation };
  }
}

/** A version-1 plan of a batch that waited (parked), in the current shape. */
export function heldPlanFromV1(raw: z.infer<typeof batchPlanV1Schema>): BatchPlan {
  return withOutcome({ calls: raw.calls.map(plannedFromV1), instructions: raw.instructions, fires: raw.fires, completionRejections: [] });
}

/**
 * The per-call evaluations inside a plan recorded by a version-1 policy
 * evaluation: the current planner turns them into today's plan, which is
 * what that build decided (the same pure rules, now in one place).
 */
export function recordedEvaluations(raw: unknown): Map<string, CallEvaluation> | undefined {
  const parsed = batchPlanV1Schema.safeParse(raw);
  if (!parsed.success) return undefined;
  const out = new Map<string, CallEvaluation>();
  for (const p of parsed.data.calls) if (p.evaluation !== undefined) out.set(p.call.callId, p.evaluation);
  return out;
}
