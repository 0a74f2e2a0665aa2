/**
 * core/job/ — One agentJob's domain logic, pure and deterministic: its input
 * and result, the conversation it keeps, preflight of a batch, the batch
 * plan (what runs, parks, is denied or redirected), the approval requests
 * built from it, each call's steps, the state carried across continue-as-new
 * with its migrations, the view a query returns, and the rehearsal of
 * recorded calls against other rules. This file is what a run carries to the
 * next.
 *
 * May import: util, temporal, redaction, model, tools, judge, policy, approval, audit.
 */

import { z } from 'zod';
import { approvalRequestSchema } from '../approval/approvals';
import { auditBacklogSchema } from '../audit/backlog';
import { batchPlanSchema } from './plan-schema';
import { chatMessageSchema } from '../model/chat';
import { conversationStateSchema } from './conversation';
import { approvalRequestV1Schema, batchPlanV1Schema, heldPlanFromV1, LegacyShapeError, requestFromV1 } from './legacy-v1';
import { ruleCountersSchema } from '../policy/call-evaluation';
import { policySnapshotSchema, type PolicySnapshot } from '../policy/snapshot';
import { clientCallSchema } from './client-calls';

export const CARRIED_STATE_VERSION = 3;

/** A parked batch: the plan, its approval requests, and gated calls whose target could not be observed. */
export const parkedBatchSchema = z.strictObject({
  plan: batchPlanSchema,
  requests: z.array(approvalRequestSchema),
  /** Gated calls that were not requested: they are answered "not executed" with the reason. */
  prepareFailures: z.array(z.strictObject({ callId: z.string(), reason: z.string() })),
  parkedAt: z.number(),
  /** The assistant text of the turn that proposed the batch, for reviewers (absent in batches parked by older builds). */
  statedReason: z.string().optional(),
});
export type ParkedBatch = z.infer<typeof parkedBatchSchema>;

const counters = {
  turns: z.number().int(),
  approvalRequests: z.number().int(),
  toolCallsExecuted: z.number().int(),
  rejectedDecisions: z.number().int(),
  continuedAsNew: z.number().int(),
};

const memory = {
  deniedFingerprints: z.array(z.string()),
  redirectedFingerprints: z.array(z.string()),
  /** Completion rules that already turned `complete` down in this job. */
  completionRuleFires: z.array(z.string()),
};

/** A call a retried `execute` settled from its target after the attempt that consumed its nonce died. */
export const reconciledCallSchema = z.strictObject({
  callId: z.string(),
  toolName: z.string(),
  reconciled: z.enum(['ran_before', 'ran_now', 'unknown']),
  ok: z.boolean(),
});
export type ReconciledCall = z.infer<typeof reconciledCallSchema>;

/** What became of an approved call once it was let through: run, failed (the tool said so), refused on re-check, or unknown. */
export const callOutcomeSchema = z.strictObject({
  requestId: z.string(),
  callId: z.string(),
  toolName: z.string(),
  outcome: z.enum(['executed', 'failed', 'refused', 'unknown', 'not_needed']),
  /** The tool's output or the error, shortened (masked when shown). */
  detail: z.string(),
});
export type CallOutcome = z.infer<typeof callOutcomeSchema>;

/** Everything a job carries across continue-as-new. */
const stateFields = {
  snapshot: policySnapshotSchema,
  /** The agent worker's seal binding the snapshot to the job (absent in state from builds before seals). */
  policySeal: z.string().optional(),
  ruleCounters: ruleCountersSchema,
  ...counters,
  ...memory,
  parked: parkedBatchSchema.nullable(),
  /** The most recent decided requests, for `airlock show`. */
  decided: z.array(approvalRequestSchema),
  /** The most recent reconciled calls, for `airlock show` (absent until a job has one; older state lacks it). */
  reconciled: z.array(reconciledCallSchema).optional(),
  /** What became of the most recent approved calls, for `airlock show` (absent until a job has one; older state lacks it). */
  outcomes: z.array(callOutcomeSchema).optional(),
  /** Audit events not yet written, and the job's count of failed writes (absent when every write succeeded; older state lacks it). */
  audit: auditBacklogSchema.optional(),
  /** A client-driven job's calls and what became of them (absent in model-driven jobs). */
  clientCalls: z.array(clientCallSchema).optional(),
};

export const carriedStateSchema = z.strictObject({
  schemaVersion: z.literal(CARRIED_STATE_VERSION),
  ...stateFields,
  /** The conversation: a digest of what is stored, and what came since the last model turn. */
  conversation: conversationStateSchema,
});
export type CarriedState = z.infer<typeof carriedStateSchema>;

/** What a job's first run starts from: its policy snapshot (and seal), the system prompt and the goal, nothing done yet. */
export function firstCarriedState(input: { readonly snapshot: PolicySnapshot; readonly policySeal: string | undefined; readonly systemPrompt: string; readonly goal: string }): CarriedState {
  return {
    schemaVersion: CARRIED_STATE_VERSION,
    snapshot: input.snapshot,
    ...(input.policySeal !== undefined ? { policySeal: input.policySeal } : {}),
    conversation: {
      head: null,
      length: 2,
      pending: [
        { role: 'system', content: input.systemPrompt },
        { role: 'user', content: input.goal },
      ],
      recent: [],
    },
    turns: 0,
    ruleCounters: {},
    deniedFingerprints: [],
    redirectedFingerprints: [],
    completionRuleFires: [],
    approvalRequests: 0,
    toolCallsExecuted: 0,
    rejectedDecisions: 0,
    parked: null,
    decided: [],
    continuedAsNew: 0,
  };
}

/** Version 2 carried the whole conversation inline. */
const carriedStateV2Schema = z.strictObject({ schemaVersion: z.literal(2), ...stateFields, messages: z.array(chatMessageSchema) });

function fromV2({ messages, ...v2 }: z.infer<typeof carriedStateV2Schema>): CarriedState {
  // Nothing of it is stored yet: the next model turn stores it all.
  return { ...v2, schemaVersion: CARRIED_STATE_VERSION, conversation: { head: null, length: messages.length, pending: messages, recent: [] } };
}

const carriedStateV1Schema = z.strictObject({
  schemaVersion: z.literal(1),
  snapshot: policySnapshotSchema,
  messages: z.array(chatMessageSchema),
  ruleCounters: ruleCountersSchema,
  ...counters,
  ...memory,
  parked: z.strictObject({ plan: batchPlanV1Schema, requests: z.array(approvalRequestV1Schema), parkedAt: z.number() }).nullable(),
  decided: z.array(approvalRequestV1Schema),
});

function fromV1(v1: z.infer<typeof carriedStateV1Schema>): z.infer<typeof carriedStateV2Schema> {
  return {
    ...v1,
    schemaVersion: 2,
    // Version 1 answered an unprepared call by turning it into a deny in the plan itself.
    parked:
      v1.parked === null
        ? null
        : { plan: heldPlanFromV1(v1.parked.plan), requests: v1.parked.requests.map(requestFromV1), prepareFailures: [], parkedAt: v1.parked.parkedAt },
    decided: v1.decided.map(requestFromV1),
  };
}

export type RestoreResult = { readonly ok: true; readonly state: CarriedState } | { readonly ok: false; readonly message: string };

function problem(error: z.ZodError): string {
  const issue = error.issues[0];
  return `${issue?.path.join('.') || '(state)'}: ${issue?.message ?? 'invalid'}`;
}

/**
 * Reads state carried by any build: the current version as is, older ones
 * migrated step by step. A newer version than this build knows is refused
 * (an older worker must not guess at it).
 */
export function restoreCarriedState(raw: unknown): RestoreResult {
  const version = z.object({ schemaVersion: z.number().int() }).safeParse(raw);
  if (!version.success) return { ok: false, message: 'carried state without a schemaVersion' };
  switch (version.data.schemaVersion) {
    case 1: {
      const parsed = carriedStateV1Schema.safeParse(raw);
      if (!parsed.success) return { ok: false, message: `version 1 state: ${problem(parsed.error)}` };
      try {
        return { ok: true, state: fromV2(fromV1(parsed.data)) };
      } catch (err) {
        if (err instanceof LegacyShapeError) return { ok: false, message: `version 1 state: ${err.message}` };
        throw err;
      }
    }
    case 2: {
      const parsed = carriedStateV2Schema.safeParse(raw);
      return parsed.success ? { ok: true, state: fromV2(parsed.data) } : { ok: false, message: `version 2 state: ${problem(parsed.error)}` };
    }
    case CARRIED_STATE_VERSION: {
      const parsed = carriedStateSchema.safeParse(raw);
      return parsed.success ? { ok: true, state: parsed.data } : { ok: false, message: problem(parsed.error) };
    }
    default:
      return { ok: false, message: `state version ${version.data.schemaVersion} was written by a newer build of airlock; run that build's workers` };
  }
}
