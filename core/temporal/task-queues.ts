/**
 * core/temporal/ — How airlock meets Temporal: the task queue names, the
 * custom search attributes the Web UI filters on, the failure types every
 * ApplicationFailure carries, the failure converter, and how a Temporal
 * error is told to a person in one line. Only `@temporalio/common` from the
 * SDK.
 *
 * May import: nothing else in core/.
 */

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

/**
 * The tools queue of one machine (`airlock-tools.nas`), or the plain tools
 * queue when the tools config describes one machine only.
 */
export function toolsQueueFor(machine: string | undefined): string {
  return machine === undefined ? TaskQueues.tools : `${TaskQueues.tools}.${machine}`;
}

/** The machine a tools queue belongs to: `nas` for `airlock-tools.nas`, undefined for the plain tools queue or another queue. */
export function machineOfQueue(queue: string): string | undefined {
  const prefix = `${TaskQueues.tools}.`;
  return queue.startsWith(prefix) && queue.length > prefix.length ? queue.slice(prefix.length) : undefined;
}
