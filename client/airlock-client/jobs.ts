import type { CliName } from '../../core/approval/card';
import { randomUUID } from 'node:crypto';
import type { Client, WorkflowHandleWithFirstExecutionRunId, WorkflowStartOptions } from '@temporalio/client';
import { WorkflowExecutionAlreadyStartedError } from '@temporalio/common';
import { AGENT_JOB_WORKFLOW, type AgentJobInput, type AgentJobResult } from '../../core/job/job-input';
import type { AgentJobStateView } from '../../core/job/job-view';
import { maskString, truncate } from '../../core/redaction/masking';
import { PENDING_MEMO_KEY, pendingMemo } from '../../core/reviewer/pending-memo';
import { TaskQueues } from '../../core/temporal/task-queues';
import type { agentJob } from '../../workflows/agent-job';
import { stateQuery } from '../../workflows/messages';
import { JobError } from '../errors';

/** Starting a job, cancelling it, and reading what it says of itself (its state query, its result). */

export interface StartJobOptions {
  readonly goal: string;
  /** How the reader types airlock, for the commands messages suggest (default `npx airlock`, which works everywhere). */
  readonly cli?: CliName;
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

/** How long `cancel` waits for an agent worker to end the run, and `decide` for one to take a decision. */
export const WORKER_WAIT_MS = 10_000;

/**
 * A job id people can read in the Web UI's list and type in a command: a
 * few words of the (masked) goal, then 48 random bits — "job-free-some-space-3f2a9c1e0b7d".
 */
export function newJobId(goal: string): string {
  const words = maskString(goal)
    .toLowerCase()
    .normalize('NFKD')
    // Accents fold to their letter: "é" is "e" and a combining mark, which goes.
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^a-z0-9]+/g, ' ')
    .trim()
    .split(' ')
    .filter((w) => w !== '');
  let slug = '';
  for (const w of words) {
    if (`${slug}-${w}`.length > 32) break;
    slug = slug === '' ? w : `${slug}-${w}`;
  }
  const random = randomUUID().replace(/-/g, '').slice(0, 12);
  return slug === '' ? `job-${random}` : `job-${slug}-${random}`;
}

export async function startJob(client: Client, options: StartJobOptions): Promise<StartedJob> {
  const jobId = options.jobId ?? newJobId(options.goal);
  const input: AgentJobInput = {
    schemaVersion: 1,
    goal: options.goal,
    requester: options.requester,
    ...(options.maxTurns !== undefined ? { maxTurns: options.maxTurns } : {}),
    ...(options.tools !== undefined ? { tools: options.tools } : {}),
    ...(options.historyEventLimit !== undefined ? { historyEventLimit: options.historyEventLimit } : {}),
  };
  const handle = await startOrExplain(client, jobId, options.newRun === true, options.cli ?? 'npx airlock', {
    taskQueue: TaskQueues.agent,
    workflowId: jobId,
    args: [input],
    // An empty memo from the start: `pendingOf` can then tell "nothing pending" without asking the job.
    memo: { [PENDING_MEMO_KEY]: pendingMemo({ goal: options.goal }) },
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
export async function cancel(client: Client, jobId: string, options: { readonly reason?: string; readonly waitMs?: number } = {}): Promise<CancelOutcome> {
  const handle = client.workflow.getHandle(jobId);
  const before = await handle.describe();
  if (before.status.name !== 'RUNNING') throw notRunning(jobId, before.status.name);
  try {
    await client.workflowService.requestCancelWorkflowExecution({
      namespace: client.options.namespace,
      workflowExecution: { workflowId: jobId, runId: before.runId },
      identity: client.options.identity,
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
    const { status } = await client.workflow.getHandle(jobId, before.runId).describe();
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
async function startOrExplain(
  client: Client,
  jobId: string,
  newRun: boolean,
  cli: CliName,
  options: WorkflowStartOptions<typeof agentJob>,
): Promise<WorkflowHandleWithFirstExecutionRunId<typeof agentJob>> {
  try {
    return await client.workflow.start<typeof agentJob>(AGENT_JOB_WORKFLOW, {
      ...options,
      workflowIdReusePolicy: newRun ? 'ALLOW_DUPLICATE' : 'REJECT_DUPLICATE',
      workflowIdConflictPolicy: 'FAIL',
    });
  } catch (err) {
    if (!(err instanceof WorkflowExecutionAlreadyStartedError)) throw err;
    const existing = await client.workflow.getHandle(jobId).describe();
    if (existing.status.name === 'RUNNING') {
      throw new JobError(`job ${jobId} is running (run ${existing.runId}); choose another --id, or cancel it with \`${cli} cancel ${jobId}\``);
    }
    throw new JobError(
      `job ${jobId} already ran and ended ${temporalStatusText(existing.status.name)} (run ${existing.runId}); pass --new-run to start a new run under this id, or choose another --id`,
    );
  }
}

export async function state(client: Client, jobId: string): Promise<AgentJobStateView> {
  return client.workflow.getHandle(jobId).query(stateQuery);
}

/** The state query with a deadline: a closed job is answered only by an agent worker replaying it. */
export async function stateWithin(client: Client, jobId: string, ms: number): Promise<AgentJobStateView> {
  return client.withDeadline(Date.now() + ms, () => state(client, jobId));
}

export async function result(client: Client, jobId: string): Promise<AgentJobResult> {
  return client.workflow.getHandle<typeof agentJob>(jobId).result();
}
