import { proxyActivities } from '@temporalio/workflow';
import type { ToolActivities } from '../../activities';
import type { ExecuteInput, ExecuteResult } from '../../activities/tool-gate';
import { TaskQueues } from '../../core/temporal/task-queues';

const { execute } = proxyActivities<ToolActivities>({
  taskQueue: TaskQueues.tools,
  startToCloseTimeout: '1 minute',
  retry: { maximumAttempts: 1 },
});

/** A caller that bypasses the job and asks the tools queue to run a call directly. */
export async function forgeExecute(input: ExecuteInput): Promise<ExecuteResult> {
  return execute(input);
}
