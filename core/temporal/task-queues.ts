/** The task queues airlock's workers poll. Each is scaled as its own deployment. */
export const TaskQueues = {
  /** Workflow tasks, model turns and policy evaluation. */
  agent: 'airlock-agent',
  /** prepare / revalidate / execute: runs where the side effects happen. */
  tools: 'airlock-tools',
  /** The semantic rule judge (a small LLM), concurrency-bounded. */
  judge: 'airlock-judge',
} as const;

export type QueueRole = keyof typeof TaskQueues;
export type TaskQueueName = (typeof TaskQueues)[QueueRole];

export const queueRoles: readonly QueueRole[] = ['agent', 'tools', 'judge'];
export const taskQueueNames: readonly TaskQueueName[] = queueRoles.map((role) => TaskQueues[role]);

export function isTaskQueueName(value: string): value is TaskQueueName {
  return (taskQueueNames as readonly string[]).includes(value);
}
