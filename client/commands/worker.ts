import { queueRoles, TaskQueues, type QueueRole } from '../../core/task-queues';
import { runWorkers } from '../../workers/run-workers';
import { defineCommand, stringOption } from '../command';
import { UsageError } from '../errors';

function rolesFor(queue: string): readonly QueueRole[] {
  if (queue === 'all') return queueRoles;
  const role = queueRoles.find((r) => r === queue || TaskQueues[r] === queue);
  if (role === undefined) {
    throw new UsageError(`--queue takes all, ${queueRoles.join(', ')} or ${queueRoles.map((r) => TaskQueues[r]).join(', ')}; got ${JSON.stringify(queue)}`);
  }
  return [role];
}

export const workerCommand = defineCommand({
  name: 'worker',
  summary: 'Run the workers of one task queue (or all) until stopped',
  usage: 'airlock worker [--queue all|agent|tools|judge]',
  options: { queue: { type: 'string' } },
  async run(args, io) {
    const roles = rolesFor(stringOption(args, 'queue') ?? 'all');
    await runWorkers({ config: io.config(), roles, log: io.err });
  },
});
