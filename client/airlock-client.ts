import { randomUUID, sign, type KeyObject } from 'node:crypto';
import {
  Client,
  Connection,
  WorkflowUpdateFailedError,
  WorkflowUpdateRPCTimeoutOrCancelledError,
  WorkflowUpdateStage,
  type ConnectionOptions,
  type WorkflowExecutionInfo,
} from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { decisionSigningText, type DecisionPayload } from '../core/approvals';
import type { AirlockConfig } from '../core/config';
import { FailureTypes } from '../core/failure-types';
import { AGENT_JOB_WORKFLOW, type AgentJobInput, type AgentJobResult } from '../core/job-input';
import type { AgentJobStateView, PendingRequestView } from '../core/job-view';
import type { agentJob } from '../workflows/agent-job';
import { AirlockSearchAttributes, statusKey, type JobStatus } from '../core/search-attributes';
import { TaskQueues } from '../core/task-queues';
import { maskString, truncate } from '../core/masking';
import { getTool } from '../core/tools/registry';
import type { ZodType } from 'zod';
import { approvalDecisionSignal, decideUpdate, decisionRejectedSignal, stateQuery } from '../workflows/messages';
import { temporal } from '@temporalio/proto';
import { dataConverterFor } from '../host/data-converter';
import { JobError } from './errors';
import { PENDING_MEMO_KEY, pendingMemo, pendingMemoSchema, type PendingMemo } from '../core/pending-memo';

export interface StartJobOptions {
  readonly goal: string;
  readonly jobId?: string;
  readonly maxTurns?: number;
  readonly tools?: string[];
  readonly requester: string;
  readonly historyEventLimit?: number;
}

export interface StartedJob {
  readonly jobId: string;
  readonly runId: string;
}

export interface PendingJob {
  readonly jobId: string;
  readonly goal: string;
  readonly pending: readonly PendingRequestView[];
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
    const handle = await this.client.workflow.start<typeof agentJob>(AGENT_JOB_WORKFLOW, {
      taskQueue: TaskQueues.agent,
      workflowId: jobId,
      args: [input],
      // An empty memo from the start: `pendingOf` can then tell "nothing pending" without asking the job.
      memo: { [PENDING_MEMO_KEY]: pendingMemo(options.goal, []) },
      staticSummary: `airlock job: ${maskString(truncate(options.goal.replace(/\s+/g, ' '), 120))}`,
    });
    return { jobId, runId: handle.firstExecutionRunId };
  }

  async state(jobId: string): Promise<AgentJobStateView> {
    return this.client.workflow.getHandle(jobId).query(stateQuery);
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
        if (memo.requests.length > 0) out.push({ jobId: info.workflowId, goal: memo.goal, pending: memo.requests });
        continue;
      }
      const state = await this.state(info.workflowId);
      if (state.pending.length > 0) out.push({ jobId: info.workflowId, goal: state.goal, pending: state.pending });
    }
    return out;
  }

  /**
   * The job's pending requests as a reviewer decides on them: from the
   * memo by `describe` (read from the job's current record, not from
   * visibility, so it is up to date), or by query for an older job.
   */
  async pendingOf(jobId: string): Promise<{ readonly status: string; readonly pending: readonly PendingRequestView[] }> {
    const description = await this.client.workflow.getHandle(jobId).describe();
    const memo = pendingFromMemo(description.memo);
    if (memo !== undefined) return { status: description.typedSearchAttributes.get(statusKey) ?? 'running', pending: memo.requests };
    if (description.status.name !== 'RUNNING') return { status: description.status.name.toLowerCase(), pending: [] };
    return this.state(jobId);
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
    const request = pickRequest(jobId, await this.pendingOf(jobId), options.requestId);
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
    return outcome.accepted === true ? { ...outcome, call: { toolName: request.toolName, args: request.args } } : outcome;
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
        if (stage === 'validator') await handle.signal(decisionRejectedSignal, payload);
        return { accepted: false, jobId, requestId: payload.requestId, code: typeof code === 'string' ? code : 'rejected', reason: cause.message };
      }
      throw err;
    }
  }
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

function pickRequest(
  jobId: string,
  state: { readonly status: string; readonly pending: readonly PendingRequestView[] },
  requestId: string | undefined): PendingRequestView {
  if (requestId !== undefined) {
    const found = state.pending.find((r) => r.requestId === requestId);
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
