import type { Client, WorkflowExecutionDescription, WorkflowExecutionInfo } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import type { ParkedBatchView } from '../../core/job/batch-view';
import { AGENT_JOB_WORKFLOW } from '../../core/job/job-input';
import type { PendingRequestView } from '../../core/job/job-view';
import { maskString } from '../../core/redaction/masking';
import { PENDING_MEMO_KEY, pendingMemoSchema, type PendingMemo } from '../../core/reviewer/pending-memo';
import { AirlockSearchAttributes, jobStatuses, statusKey, type JobStatus, type ShownStatus } from '../../core/temporal/search-attributes';
import { machineOfQueue } from '../../core/temporal/task-queues';
import { cancelRequestOf, type CancelRequest } from '../history/runs';
import { state as queryState } from './jobs';

/** What is waiting and how jobs stand, read from visibility and from each job's current record, so no worker is needed. */

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

/** An activity of the job that Temporal has scheduled and not yet seen finish. */
export interface ActivityInProgress {
  readonly activity: string;
  /** Which workers run it: the task queue's role. */
  readonly queue: 'agent' | 'tools' | 'judge';
  /** The machine whose tools worker it waits for or runs on, when the tools config lists several; null otherwise. */
  readonly machine: string | null;
  readonly attempt: number;
  /** `running`: a worker has it; `waiting`: no worker has taken this attempt yet. */
  readonly state: 'running' | 'waiting';
  /** When this attempt was scheduled (waiting) or taken (running), ISO. */
  readonly since: string | null;
  /** The last attempt's failure, its first line, masked. */
  readonly lastFailure: string | null;
}

const toolsActivities = new Set(['execute', 'prepareApproval', 'revalidate', 'resolveTargets']);
const judgeActivities = new Set(['judgeRules']);

function timeOf(t: { seconds?: unknown; nanos?: number | null } | null | undefined): string | null {
  if (t === null || t === undefined || t.seconds === undefined || t.seconds === null) return null;
  return new Date(Number(t.seconds) * 1000 + Math.floor((t.nanos ?? 0) / 1e6)).toISOString();
}

type PendingActivity = NonNullable<WorkflowExecutionDescription['raw']['pendingActivities']>[number];

/** What Temporal says of one pending activity, as people read it. */
function inProgress(p: PendingActivity): ActivityInProgress {
  const activity = p.activityType?.name ?? 'activity';
  // Started, or asked to cancel: a worker holds it.
  const { PENDING_ACTIVITY_STATE_STARTED, PENDING_ACTIVITY_STATE_CANCEL_REQUESTED } = temporal.api.enums.v1.PendingActivityState;
  const running = p.state === PENDING_ACTIVITY_STATE_STARTED || p.state === PENDING_ACTIVITY_STATE_CANCEL_REQUESTED;
  const failure = p.lastFailure?.message;
  const machine = machineOfQueue(p.activityOptions?.taskQueue?.name ?? '') ?? null;
  return {
    activity,
    queue: toolsActivities.has(activity) ? 'tools' : judgeActivities.has(activity) ? 'judge' : 'agent',
    machine,
    attempt: p.attempt ?? 1,
    state: running ? 'running' : 'waiting',
    since: running ? timeOf(p.lastStartedTime) : timeOf(p.scheduledTime),
    lastFailure: failure === undefined || failure === null || failure === '' ? null : maskString(failure.split('\n')[0] ?? ''),
  };
}

/** What Temporal and the job say of a job's status. */
export interface JobStatusInfo {
  readonly status: ShownStatus;
  /** Temporal's execution status (RUNNING, COMPLETED, CANCELLED, TERMINATED, TIMED_OUT, …). */
  readonly execution: string;
  /** `AirlockStatus` as the job last set it (unset before its first workflow task). */
  readonly airlockStatus: string | undefined;
  readonly closedAt: string | null;
  /** Activities scheduled and not finished (a running job's calls, model turns, judge calls). */
  readonly inProgress: readonly ActivityInProgress[];
  /** Who asked to cancel the job and why, once someone did (the reason is kept by Temporal, not by the job). */
  readonly cancelRequest?: CancelRequest;
}

/**
 * The job's pending requests as a reviewer decides on them: from the
 * memo by `describe` (read from the job's current record, not from
 * visibility, so it is up to date), or by query for an older job.
 */
export async function pendingOf(client: Client, jobId: string): Promise<PendingOf> {
  const description = await client.workflow.getHandle(jobId).describe();
  const status = shownStatus(description);
  const execution = description.status.name;
  // A closed job waits for nothing, whatever its memo still lists.
  if (execution !== 'RUNNING') return { status, execution, pending: [] };
  const memo = pendingFromMemo(description.memo);
  if (memo !== undefined) return { status, execution, pending: memo.requests, goal: memo.goal, ...(memo.batch !== undefined ? { batch: memo.batch } : {}) };
  const state = await queryState(client, jobId);
  return { status: state.status, execution, pending: state.pending, goal: state.goal, ...(state.batch != null ? { batch: state.batch } : {}) };
}

/** The job's status from its current record (no worker needed), with Temporal's word for jobs that ran no code to end. */
export async function status(client: Client, jobId: string): Promise<JobStatusInfo> {
  const description = await client.workflow.getHandle(jobId).describe();
  const cancelRequest = description.status.name === 'CANCELLED' ? await cancelRequestOf(client, jobId, description.runId) : undefined;
  return {
    status: shownStatus(description),
    execution: description.status.name,
    airlockStatus: description.typedSearchAttributes.get(statusKey),
    closedAt: description.closeTime?.toISOString() ?? null,
    inProgress: (description.raw.pendingActivities ?? []).map(inProgress),
    ...(cancelRequest !== undefined ? { cancelRequest } : {}),
  };
}

/** Running jobs that last set `AirlockStatus` to `status`, in Temporal's order for running workflows: newest start first. */
export function statusQuery(status: JobStatus): string {
  return `WorkflowType = "${AGENT_JOB_WORKFLOW}" AND ExecutionStatus = "Running" AND ${AirlockSearchAttributes.status.name} = "${status}"`;
}

export function listByStatus(client: Client, status: JobStatus): AsyncIterable<WorkflowExecutionInfo> {
  return client.workflow.list({ query: statusQuery(status) });
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

/** The memo a parked job publishes; undefined when there is none (an older job) or it does not parse. */
export function pendingFromMemo(memo: Record<string, unknown> | undefined): PendingMemo | undefined {
  const raw = memo?.[PENDING_MEMO_KEY];
  if (raw === undefined || raw === null) return undefined;
  const parsed = pendingMemoSchema.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}
