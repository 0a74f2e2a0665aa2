import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { AgentActivities, JudgeActivities, ToolActivities } from '../activities';
import { TaskQueues } from '../core/task-queues';

/** Model turns: a slow endpoint gets a few tries, then the job fails with `model_error`. */
export const model = proxyActivities<AgentActivities>({
  taskQueue: TaskQueues.agent,
  startToCloseTimeout: '3 minutes',
  retry: { initialInterval: '2 seconds', maximumAttempts: 5 },
});

/** Fast, deterministic-cost work on the agent worker: recorded as markers, not as scheduled tasks. */
export const local = proxyLocalActivities<AgentActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumAttempts: 5 },
});

/** prepare and revalidate only observe; calls add a summary for the Web UI on top of these. */
export const observeOptions = {
  taskQueue: TaskQueues.tools,
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '2 seconds', maximumAttempts: 5 },
} as const;

/** Safe to retry: the nonce is consumed before the side effect, so a retry reports instead of running again. */
export const executeOptions = {
  taskQueue: TaskQueues.tools,
  startToCloseTimeout: '10 minutes',
  retry: { initialInterval: '2 seconds', maximumAttempts: 10 },
} as const;

export const tools = proxyActivities<ToolActivities>(observeOptions);

/** The judge: one try within the snapshot's short budget; a failure is a verdict, never a failed job. */
export const judge = proxyActivities<JudgeActivities>({
  taskQueue: TaskQueues.judge,
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 1 },
});
