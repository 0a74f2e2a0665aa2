import { createHash, randomBytes } from 'node:crypto';
import { WithStartWorkflowOperation, type Client } from '@temporalio/client';
import type { ClientCallView } from '../../core/job/client-calls';
import { AGENT_JOB_WORKFLOW, type AgentJobInput, type AgentJobResult } from '../../core/job/job-input';
import { PENDING_MEMO_KEY, pendingMemo } from '../../core/reviewer/pending-memo';
import { TaskQueues } from '../../core/temporal/task-queues';
import { undoArgs } from '../../core/tools/undo';
import { clientCallsQuery, submitCallUpdate } from '../../workflows/messages';
import { JobError } from '../errors';
import { startInputOf } from '../history/runs';
import { result } from './jobs';
import type { Move } from '../../core/tools/fs/move-plan';

/**
 * An undo is a call of its own: `fs_undo` in a client-driven job that
 * takes that one call and ends, so it passes the same gate as any change
 * (policy, park, signed decision, revalidation, nonce, reconciliation) and
 * leaves its own history and audit. One job id per undone call: running
 * `airlock undo` again while it waits finds the same request.
 */

/** The undo job of a call: the same every time for the same call, and no other call's (a digest of both ids; its goal names them). */
export function undoJobId(jobId: string, callId: string): string {
  return `undo-${createHash('sha256').update(`${jobId}\0${callId}`).digest('hex').slice(0, 24)}`;
}

/**
 * The call's key in its undo job (a client key: 8–100 of [A-Za-z0-9._:-]).
 * While the undo job runs, the key of the call it holds: asked again, the
 * same request. Otherwise a new one: the server answers an update id a
 * closed run already took with that run's old answer, so a new undo after
 * one that ended (refused, or restored) needs a key of its own.
 */
async function undoCallKey(client: Client, workflowId: string): Promise<string> {
  const running = await client.workflow
    .getHandle(workflowId)
    .describe()
    .then((d) => d.status.name === 'RUNNING')
    .catch(() => false);
  if (running) {
    // Any Temporal client may start a job under this id first: only one started as this command starts it is this undo's.
    if (!(await startedAsUndo(client, workflowId))) throw notOurs(workflowId, 'was started with other settings');
    const calls = await client.workflow.getHandle(workflowId).query(clientCallsQuery);
    if (calls.some((c) => c.toolName !== 'fs_undo')) throw notOurs(workflowId, 'is running with calls that are not an undo');
    const [held] = calls;
    if (held !== undefined) return held.callKey;
  }
  return `undo-${randomBytes(16).toString('hex')}`;
}

function notOurs(workflowId: string, what: string): JobError {
  return new JobError(`job ${workflowId} ${what}; airlock undo did not start it. Cancel it (airlock cancel ${workflowId}) and undo again`);
}

/** Whether the running job's run was started as `submitUndo` starts one: a client-driven job on the agent queue that takes one fs_undo call, in no scope. */
async function startedAsUndo(client: Client, workflowId: string): Promise<boolean> {
  const { taskQueue, input: job } = await startInputOf(client, workflowId);
  if (taskQueue !== TaskQueues.agent || job === undefined) return false;
  return job.driver === 'client' && job.takesCalls === 1 && job.tools?.length === 1 && job.tools[0] === 'fs_undo' && job.scope.piece === undefined && job.scope.movement === undefined;
}

export interface UndoRequest {
  readonly jobId: string;
  readonly callId: string;
  /** The path the call changed, as it named it (a move's source). */
  readonly path: string;
  /** A move's destination, as the call named it: where the entry is now. */
  readonly to?: string;
  /** A bulk move's whole list, as the call named it. */
  readonly moves?: readonly Move[];
  /** Who asks: the undo job's requester (a rule may keep them from deciding it). */
  readonly requester: string;
}

export interface SubmittedUndo {
  readonly undoJobId: string;
  /** Answered (the gate let it run, or refused it), or parked for a reviewer. */
  readonly view: ClientCallView;
}

/** Starts the call's undo job (or finds it waiting) and submits the undo; returns once it is answered or parked. */
export async function submitUndo(client: Client, request: UndoRequest): Promise<SubmittedUndo> {
  const workflowId = undoJobId(request.jobId, request.callId);
  const goal = `Undo call ${request.callId} of job ${request.jobId}`;
  const input: AgentJobInput = { schemaVersion: 1, goal, requester: request.requester, driver: 'client', tools: ['fs_undo'], takesCalls: 1 };
  const callKey = await undoCallKey(client, workflowId);
  const view = await client.workflow.executeUpdateWithStart(submitCallUpdate, {
    args: [{ callKey, toolName: 'fs_undo', args: { ...undoArgs(request) } }],
    updateId: callKey,
    startWorkflowOperation: new WithStartWorkflowOperation(AGENT_JOB_WORKFLOW, {
      workflowId,
      taskQueue: TaskQueues.agent,
      workflowIdConflictPolicy: 'USE_EXISTING',
      args: [input],
      memo: { [PENDING_MEMO_KEY]: pendingMemo({ goal }) },
      staticSummary: `airlock undo: call ${request.callId} of job ${request.jobId}`.slice(0, 200),
    }),
  });
  if (view.toolName !== 'fs_undo') throw new JobError(`job ${workflowId} answered for ${view.toolName}, not for an undo; airlock undo did not start it. Cancel it (airlock cancel ${workflowId}) and undo again`);
  return { undoJobId: workflowId, view };
}

/** The undo job's result once it ends, or undefined when it has not within `waitMs`. */
export async function undoResult(client: Client, undoJobId: string, waitMs: number): Promise<AgentJobResult | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), waitMs);
  });
  try {
    return await Promise.race([result(client, undoJobId), timeout]);
  } finally {
    clearTimeout(timer);
  }
}
