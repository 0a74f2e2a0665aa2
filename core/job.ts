import { z } from 'zod';
import { approvalRequestSchema, type ApprovalRequest } from './approvals';
import { batchPlanSchema } from './batch';
import { chatMessageSchema } from './chat';
import { maskValue, truncate } from './masking';
import type { ObservedState } from './observed-state';
import { ruleCountersSchema } from './policy/evaluate';
import { policySnapshotSchema } from './policy/snapshot';
import type { JobStatus } from './search-attributes';
import { sideEffectToolNames } from './tools/definitions';

export const AGENT_JOB_WORKFLOW = 'agentJob';

export const jobScopeSchema = z.strictObject({
  piece: z.string().min(1).max(200).optional(),
  movement: z.string().min(1).max(200).optional(),
});

export const agentJobInputSchema = z.strictObject({
  schemaVersion: z.literal(1),
  goal: z.string().trim().min(1, 'goal must not be empty').max(20_000),
  /** Model turns before the job fails with `max_turns`. */
  maxTurns: z.number().int().min(1).max(1000).default(30),
  /** Tools this job may use; defaults to every registered tool. */
  tools: z
    .array(z.string())
    .refine((names) => names.every((n) => sideEffectToolNames.includes(n)), {
      message: `tools must be registered tool names (${sideEffectToolNames.join(', ')})`,
    })
    .optional(),
  /** Who asked for the job; a rule may forbid them from approving its requests. */
  requester: z.string().min(1).max(200).default('unknown'),
  scope: jobScopeSchema.default({}),
  /** Approval requests one job may raise; further gated calls are denied. */
  maxApprovalRequests: z.number().int().min(0).max(1000).default(20),
  /** Continue-as-new once history holds this many events (the server's suggestion also applies). */
  historyEventLimit: z.number().int().min(10).max(50_000).optional(),
  /** Set only by the job itself when it continues as new; parsed with its own schema. */
  carried: z.unknown().optional(),
});
export type AgentJobInput = z.input<typeof agentJobInputSchema>;
export type ParsedAgentJobInput = z.output<typeof agentJobInputSchema>;

export function allowedToolsFor(input: ParsedAgentJobInput): string[] {
  return input.tools ?? [...sideEffectToolNames];
}

export const jobOutcomes = ['completed', 'aborted', 'failed'] as const;
export type JobOutcome = (typeof jobOutcomes)[number];

export interface AgentJobResult {
  readonly schemaVersion: 1;
  readonly status: JobOutcome;
  /** Why it ended when not completed: `policy_stopped`, `max_turns`, `model_error`. */
  readonly reason?: string;
  /** Detail for people: the stopping rule, the model error. */
  readonly detail?: string;
  /** The summary given to `complete`. */
  readonly summary?: string;
  readonly turns: number;
}

/** A parked batch: the plan and its approval requests, waiting for decisions. */
export const parkedBatchSchema = z.strictObject({
  plan: batchPlanSchema,
  requests: z.array(approvalRequestSchema),
  parkedAt: z.number(),
});
export type ParkedBatch = z.infer<typeof parkedBatchSchema>;


/** Everything a job carries across continue-as-new. */
export const carriedStateSchema = z.strictObject({
  schemaVersion: z.literal(1),
  snapshot: policySnapshotSchema,
  messages: z.array(chatMessageSchema),
  turns: z.number().int(),
  ruleCounters: ruleCountersSchema,
  deniedFingerprints: z.array(z.string()),
  redirectedFingerprints: z.array(z.string()),
  /** Completion rules that already fired once in this job. */
  completionRuleFires: z.array(z.string()),
  approvalRequests: z.number().int(),
  toolCallsExecuted: z.number().int(),
  rejectedDecisions: z.number().int(),
  parked: parkedBatchSchema.nullable(),
  /** The most recent decided requests, for `airlock show`. */
  decided: z.array(approvalRequestSchema),
  continuedAsNew: z.number().int(),
});
export type CarriedState = z.infer<typeof carriedStateSchema>;

/** A pending request as reviewers see it: arguments masked, times readable. */
export interface PendingRequestView {
  readonly requestId: string;
  readonly callId: string;
  readonly toolName: string;
  readonly args: unknown;
  readonly ruleId: string;
  readonly ruleVersion: number;
  readonly reason: string;
  readonly fingerprint: string;
  readonly nonce: string;
  readonly observed: readonly ObservedState[];
  readonly editable: readonly string[];
  readonly reviewers: readonly string[] | null;
  readonly requester: string;
  readonly createdAt: string;
  readonly expiresAt: string;
}

export interface DecidedRequestView {
  readonly requestId: string;
  readonly toolName: string;
  readonly status: ApprovalRequest['status'];
  readonly reviewer: string | null;
  readonly reason: string | null;
  readonly fingerprint: string;
  readonly editedFingerprint: string | null;
  readonly decidedAt: string | null;
}

/** What query `state` returns. */
export interface AgentJobStateView {
  readonly schemaVersion: 1;
  readonly jobId: string;
  readonly status: JobStatus;
  readonly goal: string;
  readonly requester: string;
  readonly turns: number;
  readonly maxTurns: number;
  readonly policyVersion: string | undefined;
  readonly pending: readonly PendingRequestView[];
  readonly decided: readonly DecidedRequestView[];
  readonly counters: {
    readonly toolCallsExecuted: number;
    readonly approvalRequests: number;
    readonly deniedFingerprints: number;
    readonly rejectedDecisions: number;
    readonly continuedAsNew: number;
  };
  readonly result: AgentJobResult | null;
}

const iso = (ms: number) => new Date(ms).toISOString();

export function pendingView(request: ApprovalRequest): PendingRequestView {
  return {
    requestId: request.requestId,
    callId: request.callId,
    toolName: request.toolName,
    args: maskValue(request.args),
    ruleId: request.ruleId,
    ruleVersion: request.ruleVersion,
    reason: request.reason,
    fingerprint: request.fingerprint,
    nonce: request.nonce,
    observed: request.observed,
    editable: request.editable,
    reviewers: request.reviewers,
    requester: request.requester,
    createdAt: iso(request.createdAt),
    expiresAt: iso(request.expiresAt),
  };
}

export function decidedView(request: ApprovalRequest): DecidedRequestView {
  return {
    requestId: request.requestId,
    toolName: request.toolName,
    status: request.status,
    reviewer: request.decision?.reviewer ?? null,
    reason: request.decision?.reason ?? null,
    fingerprint: request.fingerprint,
    editedFingerprint: request.decision?.editedFingerprint ?? null,
    decidedAt: request.decision === null ? null : iso(request.decision.decidedAt),
  };
}

/** The Markdown card shown as the workflow's current details in the Web UI. */
export function pendingCard(requests: readonly ApprovalRequest[]): string {
  const pending = requests.filter((r) => r.status === 'pending');
  if (pending.length === 0) return '';
  const lines = [`### Waiting for approval (${pending.length})`, ''];
  for (const r of pending) {
    const target = r.observed[0]?.path ?? truncate(JSON.stringify(maskValue(r.args)), 120);
    lines.push(
      `- **${r.toolName}** on \`${target}\``,
      `  - rule: \`${r.ruleId}\` v${r.ruleVersion} — ${truncate(r.reason, 200)}`,
      `  - request: \`${r.requestId}\`, expires ${iso(r.expiresAt)}`,
    );
  }
  lines.push('', 'Decide with `airlock approve <jobId>` or `airlock deny <jobId> --reason TEXT`.');
  return lines.join('\n');
}
