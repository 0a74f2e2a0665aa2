import type { Client, WorkflowHandleWithFirstExecutionRunId } from '@temporalio/client';
import type { DecisionPayload } from '../../core/approval/approvals';
import { AGENT_JOB_WORKFLOW, type AgentJobInput, type AgentJobResult } from '../../core/job/job-input';
import type { PendingRequestView } from '../../core/job/job-view';
import type { ReplayScript, ReplayTurn } from '../../core/model/replay-script';
import { AirlockSearchAttributes } from '../../core/temporal/search-attributes';
import { TaskQueues } from '../../core/temporal/task-queues';
import type { agentJob } from '../../workflows/agent-job';
import { stateQuery } from '../../workflows/messages';
import { sleep } from './stats';

/** Scripted model turns, as the replay server answers them. */
export const call = (name: string, args: Record<string, unknown>) => ({ name, arguments: args });
export const read = (path: string) => call('fs_read', { path });
export const completeTurn: ReplayTurn = { tool_calls: [call('complete', { summary: 'done' })] };

/** `turns` model turns of one read each, then `complete`. */
export function readTurns(turns: number, path: (turn: number) => string): ReplayScript {
  return { turns: [...Array.from({ length: turns }, (_, i) => ({ tool_calls: [read(path(i))] })), completeTurn] };
}

/** One model turn with all these reads, then `complete`. */
export function readBatch(paths: readonly string[]): ReplayScript {
  return { turns: [{ tool_calls: paths.map(read) }, completeTurn] };
}

export function startJob(client: Client, jobId: string, input: Partial<AgentJobInput> = {}): Promise<WorkflowHandleWithFirstExecutionRunId> {
  return client.workflow.start(AGENT_JOB_WORKFLOW, {
    taskQueue: TaskQueues.agent,
    workflowId: jobId,
    args: [{ schemaVersion: 1, goal: `bench ${jobId}`, requester: 'bench', ...input }],
  });
}

/** The job's result; anything but `completed` is a broken bench, not a figure. */
export async function completed(client: Client, jobId: string): Promise<AgentJobResult> {
  const result = await client.workflow.getHandle<typeof agentJob>(jobId).result();
  if (result.status !== 'completed') throw new Error(`${jobId} ended ${result.status} (${result.reason ?? ''} ${result.detail ?? ''})`);
  return result;
}

export const parkedQuery = (extra = '') =>
  `WorkflowType = "${AGENT_JOB_WORKFLOW}" AND ExecutionStatus = "Running" AND ${AirlockSearchAttributes.status.name} = "awaiting_approval"${extra}`;

/**
 * Waits until the job is parked: visibility first (it adds no workflow
 * task), then one query for the request a decision must name.
 */
export async function waitParked(client: Client, jobId: string, timeoutMs = 60_000): Promise<PendingRequestView> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if ((await client.workflow.count(parkedQuery(` AND WorkflowId = "${jobId}"`))).count > 0) {
      const request = (await client.workflow.getHandle(jobId).query(stateQuery)).pending[0];
      if (request !== undefined) return request;
    }
    if (Date.now() > deadline) throw new Error(`${jobId} did not park within ${timeoutMs} ms`);
    await sleep(20);
  }
}

export function approval(request: PendingRequestView, reviewer = 'bench'): DecisionPayload {
  return { requestId: request.requestId, fingerprint: request.fingerprint, nonce: request.nonce, decision: 'approve', reviewer };
}

/** Runs `fn` over `items` with at most `limit` in flight. */
export async function pool<T>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<void>): Promise<void> {
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const index = next++;
      const item = items[index];
      if (item !== undefined) await fn(item, index);
    }
  });
  await Promise.all(lanes);
}
