/**
 * core/audit/ — The audit trail: every event type with its allowlisted,
 * masked fields, and the backlog a job keeps until the audit log has its
 * events.
 *
 * May import: util, temporal, redaction, approval.
 */

import { approvalCardSchema } from '../approval/card';
import { z } from 'zod';
import { FailureTypes } from '../temporal/failure-types';
import { maskPreview, maskString, maskValue } from '../redaction/masking';
import { canonicalJson } from '../util/canonical-json';
import { sha256Hex } from '../util/sha256';
import { standingEventSchemas } from './standing-events';

/**
 * Every audit event airlock writes, one definition per type. The field
 * allowlist is derived from these: a field not declared here never reaches
 * the log, and code that sets one does not compile.
 */
const call = { callId: z.string(), toolName: z.string() };
const rule = { ruleId: z.string(), ruleVersion: z.number() };
/** How a decision arrived: the `approvalDecision` signal or the `decide` update. */
const via = z.enum(['signal', 'update']);
const rejection = {
  requestId: z.string().optional(),
  reviewer: z.string().optional(),
  code: z.string(),
  reason: z.string(),
  via,
};

export const runtimeErrorCodes = [
  'model_error',
  'facts_unavailable',
  'prepare_failed',
  'revalidation_failed',
  'execute_failed',
  /** The standing approvals could not be asked or changed; a person decides, as without them. */
  'standing_unavailable',
  /** The job was cancelled (Web UI, `temporal workflow cancel`, a client); it ended as cancelled. */
  'cancelled',
  ...Object.values(FailureTypes),
] as const;
export type RuntimeErrorCode = (typeof runtimeErrorCodes)[number];

/** Why `airlock mcp --listen` refused a request (`mcp_refused`). */
export const mcpRefusalReasons = ['no_token', 'unknown_token', 'revoked_token', 'foreign_origin', 'wrong_host'] as const;
export type McpRefusalReason = (typeof mcpRefusalReasons)[number];

export const auditEventSchemas = {
  policy_evaluation: z.strictObject({
    ...call,
    category: z.string().optional(),
    decision: z.string(),
    outcome: z.string(),
    argsSummary: z.string().optional(),
    /** The machine the call is for, when the tools config lists several. */
    machine: z.string().optional(),
  }),
  policy_rule_matched: z.strictObject({
    ...call,
    ...rule,
    action: z.string(),
    shadow: z.boolean(),
    /** How a judged rule came to act. */
    detail: z.string().optional(),
    /** `duplicate`: an observational rule that already fired on this exact call state. */
    outcome: z.literal('duplicate').optional(),
    detectors: z.array(z.string()).optional(),
  }),
  policy_notification_queued: z.strictObject({
    ...call,
    ...rule,
    /** The rule's name and instruction (absent in events written by builds before notifications). */
    reason: z.string().optional(),
    argsSummary: z.string().optional(),
  }),
  policy_instruction_injected: z.strictObject({ instructions: z.number(), turn: z.number() }),
  policy_tool_denied: z.strictObject({ ...call, ruleId: z.string().nullable(), fingerprint: z.string().optional(), reason: z.string() }),
  policy_task_stopped: z.strictObject({ ruleId: z.string(), reason: z.literal('policy_stopped'), detail: z.string().optional() }),
  approval_requested: z.strictObject({
    requestId: z.string(),
    ...call,
    ...rule,
    fingerprint: z.string(),
    requester: z.string(),
    argsSummary: z.string(),
    expiresAt: z.string(),
    /** What the call acts on and why it needs approval (absent in events written by builds before notifications). */
    target: z.string().optional(),
    reason: z.string().optional(),
    /** The approval card as reviewers see it (masked; absent in events written by builds before the card). */
    card: approvalCardSchema.optional(),
    machine: z.string().optional(),
  }),
  approval_decided: z.strictObject({
    requestId: z.string(),
    toolName: z.string(),
    /** The request's rule (absent in events written by builds before it was recorded). */
    ruleId: z.string().optional(),
    decision: z.enum(['approve', 'deny']),
    reviewer: z.string(),
    reason: z.string().optional(),
    originalFingerprint: z.string(),
    editedFingerprint: z.string().optional(),
    signed: z.boolean(),
    /** What signed it: an Ed25519 reviewer key or a passkey (absent when unsigned, and in events from builds before passkeys). */
    signedWith: z.enum(['key', 'passkey']).optional(),
    via,
    target: z.string().optional(),
  }),
  /**
   * A waiting request ended by an operator rather than decided by a
   * reviewer (`airlock agent revoke`: the agent that asked is no longer
   * trusted). It is not run; it narrows what may happen, so it needs no
   * reviewer's signature, and `by` is who said they withdrew it.
   */
  approval_withdrawn: z.strictObject({
    requestId: z.string(),
    toolName: z.string(),
    ruleId: z.string(),
    fingerprint: z.string(),
    by: z.string(),
    reason: z.string(),
    target: z.string().optional(),
  }),
  /** A decision about no request the job holds (wrong request id, fingerprint or nonce). */
  approval_fingerprint_mismatch: z.strictObject(rejection),
  /** A decision about a held request that is not allowed (decided already, expired, reviewer, signature, edit). */
  approval_rejected: z.strictObject(rejection),
  approval_expired: z.strictObject({
    requestId: z.string(),
    toolName: z.string(),
    ruleId: z.string().optional(),
    fingerprint: z.string(),
    reason: z.literal('expired'),
    target: z.string().optional(),
  }),
  ...standingEventSchemas,
  /** A notification about one of the job's events that no endpoint attempt delivered; the job went on regardless. */
  notification_failed: z.strictObject({
    /** The notified event (its audit type) and its id in the notification body. */
    event: z.string(),
    eventId: z.string(),
    requestId: z.string().optional(),
    /** The endpoint as configured, credentials hidden. */
    endpoint: z.string(),
    attempts: z.number(),
    error: z.string(),
  }),
  tool_executed: z.strictObject({
    ...call,
    fingerprint: z.string(),
    ruleId: z.string().optional(),
    ok: z.boolean(),
    /** The stored outcome of an earlier attempt, reported instead of running again. */
    replayed: z.boolean(),
    /** Settled from the target after the attempt that consumed the nonce died: its effect was in place, it ran now, or unknown. */
    reconciled: z.enum(['ran_before', 'ran_now', 'unknown']).optional(),
    /** Set for an approved call: its request, and its target as observed for the reviewer. */
    requestId: z.string().optional(),
    target: z.string().optional(),
    /** Not run: the approved call's tool found nothing left to do (`reason` says why); no effect, not a failure. */
    skipped: z.literal('not_needed').optional(),
    /** Why it was not needed, or (when `ok` is false) what the tool reported. */
    reason: z.string().optional(),
    /** The machine whose tools worker ran it, when the tools config lists several. */
    machine: z.string().optional(),
  }),
  runtime_error: z.strictObject({
    code: z.enum(runtimeErrorCodes),
    error: z.string(),
    callId: z.string().optional(),
    toolName: z.string().optional(),
    requestId: z.string().optional(),
    turn: z.number().optional(),
  }),
  /** A job ended with its own result: how, the facts of its gated calls, and the model's summary (its words). */
  job_ended: z.strictObject({
    status: z.enum(['completed', 'aborted', 'failed']),
    reason: z.string().optional(),
    detail: z.string().optional(),
    /** What happened to the calls a reviewer was asked about, in one sentence. */
    facts: z.string(),
    /** How many calls a reviewer was asked about. */
    gated: z.number().optional(),
    summary: z.string().optional(),
  }),
  /** A job was cancelled (the reason a person gave is in the job's history: `airlock show`), with the requests it left undecided. */
  job_cancelled: z.strictObject({
    turn: z.number(),
    pending: z.array(z.strictObject({ requestId: z.string(), toolName: z.string(), target: z.string().optional() })).optional(),
  }),
  judge_result: z.strictObject({
    ...call,
    ruleId: z.string(),
    result: z.enum(['match', 'no_match', 'unknown', 'failed']),
    confidence: z.number().optional(),
    status: z.string(),
    detail: z.string().optional(),
    enforced: z.boolean(),
    shadow: z.boolean(),
    latencyMs: z.number(),
    model: z.string(),
    cached: z.boolean(),
  }),
  /**
   * `airlock mcp --listen` refused an HTTP request before any job saw it:
   * no token, a token it does not know or that was revoked, a browser
   * page's origin it does not accept, or a Host that is not its own. The
   * token itself is never recorded.
   */
  mcp_refused: z.strictObject({
    reason: z.enum(mcpRefusalReasons),
    /** The peer's address as the listening socket saw it. */
    remoteAddress: z.string(),
    /** The token's agent, when the token is known (a revoked one). */
    agent: z.string().optional(),
    /** The Host or Origin that was refused. */
    host: z.string().optional(),
    origin: z.string().optional(),
  }),
  /** A call an MCP client sent that the agent's job refused before its gate (unknown tool, invalid arguments): an update the job rejected leaves no history of its own. */
  mcp_call_refused: z.strictObject({
    agent: z.string(),
    toolName: z.string().max(200),
    reason: z.string().max(2000),
  }),
} as const;

export type AuditEventType = keyof typeof auditEventSchemas;
export const auditEventTypes = Object.keys(auditEventSchemas) as AuditEventType[];
export type AuditData<T extends AuditEventType> = z.input<(typeof auditEventSchemas)[T]>;

interface AuditEnvelope<T extends AuditEventType> {
  readonly type: T;
  readonly jobId: string;
  /** Workflow time, ISO 8601. */
  readonly at: string;
  readonly policyVersion: string | undefined;
  /**
   * The run of the job that wrote the event, set by the activity that writes
   * it: one job id can have several runs (`run --id X --new-run`), and a
   * job continued as new has a run per part. Events written before it was
   * recorded have none.
   */
  readonly runId?: string;
  /**
   * The event's identity, given by the job when it records it (the
   * recording run's id and a count): the same however often the event is
   * written, a workflow task redone after a worker crash included, where
   * its `at` is that of the redone task. Events of older builds have none.
   */
  readonly eventId?: string;
  readonly data: AuditData<T>;
}

export type AuditEvent = { [T in AuditEventType]: AuditEnvelope<T> }[AuditEventType];

const allowedFields: Readonly<Record<string, ReadonlySet<string>>> = Object.fromEntries(
  Object.entries(auditEventSchemas).map(([type, schema]) => [type, new Set(Object.keys(schema.shape))]),
);

const MAX_FIELD_TEXT = 2000;

/** Drops fields outside the event type's definition, masks secrets and bounds sizes. */
export function sanitizeAuditEvent(event: AuditEvent): AuditEvent {
  const allowed = allowedFields[event.type] ?? new Set<string>();
  const data: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(event.data)) {
    if (!allowed.has(key) || value === undefined) continue;
    data[key] = typeof value === 'string' ? maskPreview(value, MAX_FIELD_TEXT) : maskValue(value);
  }
  // The data keeps its type's shape: only declared fields, each masked in place.
  return { ...event, jobId: maskString(event.jobId), data } as AuditEvent;
}

/** An event as the job records it; the buffer adds job id, time and policy version. */
export type AuditRecord = { [T in AuditEventType]: { readonly type: T; readonly data: AuditData<T> } }[AuditEventType];

/**
 * Each event's identity, the same however often it is written: the id the
 * job gave it; for an event of an older build, a digest of what it is
 * (run, type, job, time, data) and, for an event identical to one before
 * it in the batch, how many came before (a job sends a batch again, whole
 * and in order, after a write it could not confirm). A store keyed by
 * these ids holds every event once.
 */
export function auditEventIds(events: readonly AuditEvent[]): string[] {
  const seen = new Map<string, number>();
  return events.map((event) => {
    if (event.eventId !== undefined) return event.eventId;
    const base = sha256Hex(canonicalJson({ runId: event.runId ?? null, type: event.type, jobId: event.jobId, at: event.at, data: event.data }));
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    return (n === 0 ? base : sha256Hex(`${base}:${n}`)).slice(0, 32);
  });
}
