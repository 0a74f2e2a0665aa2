import { randomUUID, sign, type KeyObject } from 'node:crypto';
import {
  Client,
  Connection,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  WorkflowUpdateStage,
  type ConnectionOptions,
  type WorkflowExecutionDescription,
  type WorkflowExecutionInfo,
  type WorkflowHandleWithFirstExecutionRunId,
  type WorkflowStartOptions,
} from '@temporalio/client';
import { ApplicationFailure, WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { decisionSigningText, type DecisionPayload } from '../core/approval/approvals';
import type { AirlockConfig } from '../core/config/config';
import { FailureTypes } from '../core/temporal/failure-types';
import { AGENT_JOB_WORKFLOW, type AgentJobInput, type AgentJobResult } from '../core/job/job-input';
import type { AgentJobStateView, PendingRequestView } from '../core/job/job-view';
import type { agentJob } from '../workflows/agent-job';
import { AirlockSearchAttributes, jobStatuses, statusKey, type JobStatus, type ShownStatus } from '../core/temporal/search-attributes';
import type { ParkedBatchView } from '../core/job/batch-view';
import { TaskQueues } from '../core/temporal/task-queues';
import { maskString, maskValue, truncate } from '../core/redaction/masking';
import { argAt } from '../core/policy/conditions';
import { getTool } from '../core/tools/registry';
import type { ZodType } from 'zod';
import { approvalDecisionSignal, decideUpdate, decisionRejectedSignal, stateQuery } from '../workflows/messages';
import { temporal } from '@temporalio/proto';
import { dataConverterFor } from '../host/data-converter';
import { JobError } from './errors';
import { PENDING_MEMO_KEY, pendingMemo, pendingMemoSchema, type PendingMemo } from '../core/reviewer/pending-memo';

export interface StartJobOptions {
  readonly goal: string;
  readonly jobId?: string;
  readonly maxTurns?: number;
  readonly tools?: string[];
  readonly requester: string;
  readonly historyEventLimit?: number;
  /** Start even when a finished job has this id (a new run under it); a running one is always refused. */
  readonly newRun?: boolean;
}

export interface StartedJob {
  readonly jobId: string;
  readonly runId: string;
}

/** A job's pending requests as `pendingOf` reads them; `goal` and `batch` for its approval cards. */
export interface PendingOf {
  readonly status: ShownStatus;
  readonly execution: string;
  readonly pending: readonly PendingRequestView[];
  readonly goal?: string;
  readonly batch?: ParkedBatchView;
}

export interface PendingJob {
  readonly jobId: string;
  readonly goal: string;
  readonly pending: readonly PendingRequestView[];
  /** The parked batch: the model's stated reason and the batch's calls (absent for jobs parked by older builds). */
  readonly batch?: ParkedBatchView;
}

/** What Temporal and the job say of a job's status. */
export interface JobStatusInfo {
  readonly status: ShownStatus;
  /** Temporal's execution status (RUNNING, COMPLETED, CANCELLED, TERMINATED, TIMED_OUT, …). */
  readonly execution: string;
  /** `AirlockStatus` as the job last set it (unset before its first workflow task). */
  readonly airlockStatus: string | undefined;
  readonly closedAt: string | null;
}

export interface DecideOptions {
  readonly decision: 'approve' | 'deny';
  /** Which request; may be omitted when exactly one is pending. */
  readonly requestId?: string;
  /** New values for editable fields (approve only), as typed on a command line. */
  readonly set?: Readonly<Record<string, string>>;
  readonly reason?: string;
  readonly reviewer: string;
  /** The reviewer's Ed25519 private key: the decision is signed (required by some rules). */
  readonly signingKey?: KeyObject;
  /** How long to wait for an agent worker to take the decision (default `WORKER_WAIT_MS`). */
  readonly workerWaitMs?: number;
}

export type DecideOutcome =
  | {
      readonly accepted: true;
      readonly jobId: string;
      readonly requestId: string;
      readonly status: 'approved' | 'denied';
      readonly editedFingerprint: string | null;
      /** What was decided, as the reviewer saw it (absent when the payload was sent as is). */
      readonly call?: { readonly toolName: string; readonly args: unknown };
      /** Fields an approval edited: the value as requested and as approved (masked). */
      readonly edits?: ReadonlyArray<{ readonly field: string; readonly before: unknown; readonly after: unknown }>;
    }
  | { readonly accepted: false; readonly jobId: string; readonly requestId: string; readonly code: string; readonly reason: string }
  /**
   * No agent worker took the decision in time: it was sent as a signal,
   * which the server keeps, and the job applies (or rejects and audits) it
   * when an agent worker runs again.
   */
  | {
      readonly accepted: 'queued';
      readonly jobId: string;
      readonly requestId: string;
      readonly reason: string;
      /** When a worker last polled the agent queue, as the server remembers it (it forgets after a few minutes). */
      readonly lastAgentPoll: string | null;
    };

export interface CancelOutcome {
  readonly jobId: string;
  readonly runId: string;
  /** How the run ended (`cancelled`, or another end it reached first), or `cancel_requested` while no worker has acted on it. */
  readonly status: string;
}

/** Temporal's execution status as words: `TIMED_OUT` is `timed out`. */
export function temporalStatusText(name: string): string {
  return name.toLowerCase().replace(/_/g, ' ');
}

function notRunning(jobId: string, status: string): JobError {
  return new JobError(`job ${jobId} is not running: it ended ${temporalStatusText(status)}; only a running job can be cancelled`);
}

/** How long `decide` waits for an agent worker to take a decision before sending it to wait for one. */
export const WORKER_WAIT_MS = 10_000;

/** The typed client the CLI uses: one method per thing a reviewer or operator does. */
export class AirlockClient {
  private constructor(
    readonly client: Client,
    private readonly connection: Connection,
  ) {}

  /** `connection` adds options to the gRPC connection (tests count calls with interceptors). */
  static async connect(config: AirlockConfig, connection?: Pick<ConnectionOptions, 'interceptors'>): Promise<AirlockClient> {
    const conn = await Connection.connect({ ...connection, address: config.temporal.address, connectTimeout: 5000 });
    return AirlockClient.over(conn, config);
  }

  private static over(connection: Connection, config: AirlockConfig): AirlockClient {
    return new AirlockClient(new Client({ connection, namespace: config.temporal.namespace, dataConverter: dataConverterFor(config) }), connection);
  }

  async close(): Promise<void> {
    await this.connection.close();
  }

  async startJob(options: StartJobOptions): Promise<StartedJob> {
    const jobId = options.jobId ?? `job-${randomUUID()}`;
    const input: AgentJobInput = {
      schemaVersion: 1,
      goal: options.goal,
      requester: options.requester,
      ...(options.maxTurns !== undefined ? { maxTurns: options.maxTurns } : {}),
      ...(options.tools !== undefined ? { tools: options.tools } : {}),
      ...(options.historyEventLimit !== undefined ? { historyEventLimit: options.historyEventLimit } : {}),
    };
    const handle = await this.startOrExplain(jobId, options.newRun === true, {
      taskQueue: TaskQueues.agent,
      workflowId: jobId,
      args: [input],
      // An empty memo from the start: `pendingOf` can then tell "nothing pending" without asking the job.
      memo: { [PENDING_MEMO_KEY]: pendingMemo(options.goal, []) },
      staticSummary: `airlock job: ${maskString(truncate(options.goal.replace(/\s+/g, ' '), 120))}`,
    });
    return { jobId, runId: handle.firstExecutionRunId };
  }

  /**
   * Asks Temporal to cancel the job's current run; the job's wait (for a
   * decision, a model turn, a tool) is cancelled and the run ends cancelled.
   * Waits up to `waitMs` for it to end, which needs an agent worker; a job
   * that is not running is a `JobError` naming how it ended.
   */
  async cancel(jobId: string, options: { readonly reason?: string; readonly waitMs?: number } = {}): Promise<CancelOutcome> {
    const handle = this.client.workflow.getHandle(jobId);
    const before = await handle.describe();
    if (before.status.name !== 'RUNNING') throw notRunning(jobId, before.status.name);
    try {
      await this.client.workflowService.requestCancelWorkflowExecution({
        namespace: this.client.options.namespace,
        workflowExecution: { workflowId: jobId, runId: before.runId },
        identity: this.client.options.identity,
        // The same request id makes a retried call one request.
        requestId: randomUUID(),
        reason: options.reason ?? '',
      });
    } catch (err) {
      // It may have ended between the two calls: say how, rather than the server's words.
      const now = await handle.describe();
      if (now.runId === before.runId && now.status.name !== 'RUNNING') throw notRunning(jobId, now.status.name);
      throw err;
    }
    const deadline = Date.now() + (options.waitMs ?? WORKER_WAIT_MS);
    for (;;) {
      const { status } = await this.client.workflow.getHandle(jobId, before.runId).describe();
      if (status.name !== 'RUNNING') return { jobId, runId: before.runId, status: temporalStatusText(status.name) };
      if (Date.now() >= deadline) return { jobId, runId: before.runId, status: 'cancel_requested' };
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  /**
   * Starts under an id no job has used, unless `newRun`: a finished job's id
   * is refused by the server (REJECT_DUPLICATE) and the refusal says how that
   * job ended and which flag starts a new run; a running job's id is refused
   * either way (the conflict policy is FAIL).
   */
  private async startOrExplain(
    jobId: string,
    newRun: boolean,
    options: WorkflowStartOptions<typeof agentJob>,
  ): Promise<WorkflowHandleWithFirstExecutionRunId<typeof agentJob>> {
    try {
      return await this.client.workflow.start<typeof agentJob>(AGENT_JOB_WORKFLOW, {
        ...options,
        workflowIdReusePolicy: newRun ? 'ALLOW_DUPLICATE' : 'REJECT_DUPLICATE',
        workflowIdConflictPolicy: 'FAIL',
      });
    } catch (err) {
      if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
      const existing = await this.client.workflow.getHandle(jobId).describe();
      if (existing.status.name === 'RUNNING') {
        throw new JobError(`job ${jobId} is running (run ${existing.runId}); choose another --id, or cancel it with \`airlock cancel ${jobId}\``);
      }
      throw new JobError(
        `job ${jobId} already ran and ended ${temporalStatusText(existing.status.name)} (run ${existing.runId}); pass --new-run to start a new run under this id, or choose another --id`,
      );
    }
  }

  async state(jobId: string): Promise<AgentJobStateView> {
    return this.client.workflow.getHandle(jobId).query(stateQuery);
  }

  /** The state query with a deadline: a closed job is answered only by an agent worker replaying it. */
  async stateWithin(jobId: string, ms: number): Promise<AgentJobStateView> {
    return this.client.withDeadline(Date.now() + ms, () => this.state(jobId));
  }

  async result(jobId: string): Promise<AgentJobResult> {
    return this.client.workflow.getHandle<typeof agentJob>(jobId).result();
  }

  /**
   * Jobs parked on approvals with their pending requests, from one
   * visibility listing: each parked job publishes its requests in its memo,
   * so no worker is asked and no job is loaded into a cache. Visibility is
   * eventually consistent: a request decided a moment ago may still be
   * listed, and deciding it again is rejected by the job. A job parked by
   * an older build, without the memo, is asked by query.
   */
  async listPending(): Promise<PendingJob[]> {
    const out: PendingJob[] = [];
    for await (const info of this.listByStatus('awaiting_approval')) {
      const memo = pendingFromMemo(info.memo);
      if (memo !== undefined) {
        if (memo.requests.length > 0) out.push({ jobId: info.workflowId, goal: memo.goal, pending: memo.requests, ...(memo.batch !== undefined ? { batch: memo.batch } : {}) });
        continue;
      }
      const state = await this.state(info.workflowId);
      if (state.pending.length > 0) out.push({ jobId: info.workflowId, goal: state.goal, pending: state.pending, ...(state.batch != null ? { batch: state.batch } : {}) });
    }
    return out;
  }

  /**
   * The job's pending requests as a reviewer decides on them: from the
   * memo by `describe` (read from the job's current record, not from
   * visibility, so it is up to date), or by query for an older job.
   */
  async pendingOf(jobId: string): Promise<PendingOf> {
    const description = await this.client.workflow.getHandle(jobId).describe();
    const status = shownStatus(description);
    const execution = description.status.name;
    // A closed job waits for nothing, whatever its memo still lists.
    if (execution !== 'RUNNING') return { status, execution, pending: [] };
    const memo = pendingFromMemo(description.memo);
    if (memo !== undefined) return { status, execution, pending: memo.requests, goal: memo.goal, ...(memo.batch !== undefined ? { batch: memo.batch } : {}) };
    const state = await this.state(jobId);
    return { status: state.status, execution, pending: state.pending, goal: state.goal, ...(state.batch != null ? { batch: state.batch } : {}) };
  }

  /** The job's status from its current record (no worker needed), with Temporal's word for jobs that ran no code to end. */
  async status(jobId: string): Promise<JobStatusInfo> {
    const description = await this.client.workflow.getHandle(jobId).describe();
    return {
      status: shownStatus(description),
      execution: description.status.name,
      airlockStatus: description.typedSearchAttributes.get(statusKey),
      closedAt: description.closeTime?.toISOString() ?? null,
    };
  }

  listByStatus(status: JobStatus): AsyncIterable<WorkflowExecutionInfo> {
    return this.client.workflow.list({
      query: `WorkflowType = "${AGENT_JOB_WORKFLOW}" AND ExecutionStatus = "Running" AND ${AirlockSearchAttributes.status.name} = "${status}"`,
    });
  }

  /**
   * Approves or denies one pending request by the `decide` update, binding
   * the decision to the request's fingerprint and nonce as the reviewer saw
   * them. A rejection is also sent as a signal, so the job audits it.
   */
  async decide(jobId: string, options: DecideOptions): Promise<DecideOutcome> {
    const found = await this.pendingOf(jobId);
    if (found.execution !== 'RUNNING') throw new JobError(closedJobMessage(jobId, found.status));
    const request = pickRequest(jobId, found, options.requestId);
    const unsigned: DecisionPayload = {
      requestId: request.requestId,
      fingerprint: request.fingerprint,
      nonce: request.nonce,
      decision: options.decision,
      // Trimmed as the job's schema trims it, so the signed text is the text the job verifies.
      reviewer: options.reviewer.trim(),
      ...(options.reason !== undefined ? { reason: options.reason } : {}),
      ...(options.set !== undefined && Object.keys(options.set).length > 0
        ? { args: coerceEdits(request.toolName, options.set) }
        : {}),
    };
    const payload =
      options.signingKey === undefined
        ? unsigned
        : { ...unsigned, signature: sign(null, Buffer.from(decisionSigningText(jobId, unsigned)), options.signingKey).toString('base64') };
    const outcome = await this.sendDecision(jobId, payload, options.workerWaitMs);
    if (outcome.accepted !== true) return outcome;
    const edits = Object.entries(payload.args ?? {}).map(([field, after]) => ({ field, before: argAt(request.args, field), after: maskValue(after) }));
    return { ...outcome, call: { toolName: request.toolName, args: request.args }, ...(edits.length > 0 ? { edits } : {}) };
  }

  /** The latest poll of the agent task queue the server remembers, ISO time, or null. */
  async lastAgentPoll(): Promise<string | null> {
    const response = await this.client.workflowService.describeTaskQueue({
      namespace: this.client.options.namespace,
      taskQueue: { name: TaskQueues.agent, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
      taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
    });
    const times = (response.pollers ?? []).flatMap((p) => {
      const at = p.lastAccessTime;
      return at?.seconds == null ? [] : [Number(at.seconds) * 1000 + Math.floor((at.nanos ?? 0) / 1e6)];
    });
    return times.length === 0 ? null : new Date(Math.max(...times)).toISOString();
  }

  /** Sends a complete payload; used by `decide` and by tests that craft payloads. */
  async sendDecision(jobId: string, payload: DecisionPayload, workerWaitMs = WORKER_WAIT_MS): Promise<DecideOutcome> {
    const handle = this.client.workflow.getHandle(jobId);
    try {
      // An update needs a worker to accept it, and one only admitted is not durable: wait a bounded time.
      const update = await this.client.withDeadline(Date.now() + workerWaitMs, () =>
        handle.startUpdate(decideUpdate, { args: [payload], waitForStage: WorkflowUpdateStage.ACCEPTED }),
      );
      const result = await update.result();
      return { accepted: true, jobId, ...result };
    } catch (err) {
      if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError) {
        // A signal is kept by the server until a worker runs the job. Should the admitted update be delivered
        // too, the second of the two is rejected by the job as already decided (and audited).
        await handle.signal(approvalDecisionSignal, payload);
        const lastAgentPoll = await this.lastAgentPoll();
        const since = lastAgentPoll === null ? 'no agent worker has polled recently' : `an agent worker last polled at ${lastAgentPoll}`;
        return {
          accepted: 'queued',
          jobId,
          requestId: payload.requestId,
          lastAgentPoll,
          reason: `no agent worker took the decision within ${workerWaitMs / 1000} s (${since}); it was sent and will be applied, or rejected and audited, when an agent worker runs the job`,
        };
      }
      const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
      if (cause instanceof ApplicationFailure && cause.type === FailureTypes.DecisionRejected) {
        const [code, stage] = Array.isArray(cause.details) ? cause.details : [];
        // A validator rejection leaves no trace in history: report it so the job audits it.
        if (stage === 'validator') await handle.signal(decisionRejectedSignal, reportedRejection(payload));
        return { accepted: false, jobId, requestId: payload.requestId, code: typeof code === 'string' ? code : 'rejected', reason: cause.message };
      }
      throw err;
    }
  }
}

/** Larger than any valid decision (edits included): reported by its ids only, so history does not keep it. */
const REPORTED_PAYLOAD_LIMIT = 64 * 1024;

/**
 * What the client reports of a decision the validator rejected. An
 * oversized one (a megabyte field) is reported by request and reviewer
 * alone, which the job audits as an invalid payload: the rejection is
 * recorded without keeping the megabyte in the job's history.
 */
export function reportedRejection(payload: DecisionPayload): unknown {
  if (JSON.stringify(payload).length <= REPORTED_PAYLOAD_LIMIT) return payload;
  const short = (value: unknown) => (typeof value === 'string' ? value.slice(0, 200) : undefined);
  return { requestId: short(payload.requestId), reviewer: short(payload.reviewer), oversized: true };
}

/**
 * Command-line values are text; a field whose schema wants a number or a
 * boolean gets one. Anything that fits neither stays text, and the job's own
 * check explains what is wrong with it.
 */
export function coerceEdits(toolName: string, set: Readonly<Record<string, string>>): Record<string, unknown> {
  const shape = (getTool(toolName)?.parameters as { shape?: Record<string, ZodType> } | undefined)?.shape ?? {};
  const out: Record<string, unknown> = {};
  for (const [field, raw] of Object.entries(set)) {
    const schema = shape[field];
    let value: unknown = raw;
    if (schema !== undefined && !schema.safeParse(raw).success) {
      try {
        const typed: unknown = JSON.parse(raw);
        if (schema.safeParse(typed).success) value = typed;
      } catch {
        // Not JSON: keep the text.
      }
    }
    out[field] = value;
  }
  return out;
}

/**
 * A job's status for people: a terminated or timed-out job ran no code to
 * say so, and a job cancelled by a build before cancellations were
 * reported still shows its last `AirlockStatus`; Temporal's status wins.
 */
export function shownStatus(description: Pick<WorkflowExecutionDescription, 'status' | 'typedSearchAttributes'>): ShownStatus {
  const own = description.typedSearchAttributes.get(statusKey);
  const known = jobStatuses.find((s) => s === own);
  switch (description.status.name) {
    case 'CANCELLED':
      return 'cancelled';
    case 'TERMINATED':
      return 'terminated';
    case 'TIMED_OUT':
      return 'timed_out';
    case 'FAILED':
      return known === 'completed' || known === 'aborted' ? known : 'failed';
    case 'RUNNING':
      return known ?? 'running';
    default:
      return known ?? 'completed';
  }
}

const closedWords: Partial<Record<ShownStatus, string>> = {
  cancelled: 'was cancelled',
  terminated: 'was terminated',
  timed_out: 'timed out',
  completed: 'has completed',
  aborted: 'was aborted',
  failed: 'has failed',
};

/** Why a closed job takes no decision, in one line. */
export function closedJobMessage(jobId: string, status: ShownStatus): string {
  return `job ${jobId} ${closedWords[status] ?? `is ${status}`}; there is nothing left to approve or deny (see \`airlock show ${jobId}\`)`;
}

function pickRequest(
  jobId: string,
  state: { readonly status: string; readonly pending: readonly PendingRequestView[] },
  requestId: string | undefined): PendingRequestView {
  if (requestId !== undefined) {
    // The full id, or a prefix that names one request (the `pending` table shows the first characters).
    const prefixed = requestId.length >= 4 ? state.pending.filter((r) => r.requestId.startsWith(requestId)) : [];
    const found = state.pending.find((r) => r.requestId === requestId) ?? (prefixed.length === 1 ? prefixed[0] : undefined);
    if (found === undefined) {
      throw new JobError(`job ${jobId} has no pending request ${requestId}; see \`airlock show ${jobId}\``);
    }
    return found;
  }
  if (state.pending.length === 0) throw new JobError(`job ${jobId} has no pending approval request (status: ${state.status})`);
  if (state.pending.length > 1) {
    throw new JobError(
      `job ${jobId} has ${state.pending.length} pending requests; choose one with --request (${state.pending.map((r) => `${r.requestId} ${r.toolName}`).join(', ')})`,
    );
  }
  return state.pending[0]!;
}

/** The memo a parked job publishes; undefined when there is none (an older job) or it does not parse. */
function pendingFromMemo(memo: Record<string, unknown> | undefined): PendingMemo | undefined {
  const raw = memo?.[PENDING_MEMO_KEY];
  if (raw === undefined || raw === null) return undefined;
  const parsed = pendingMemoSchema.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}
