import { queueRoles, TaskQueues, type QueueRole } from '../../core/temporal/task-queues';
import { stringOption, type CommandRun } from '../command';
import { UsageError } from '../../client/errors';

function rolesFor(queue: string): readonly QueueRole[] {
  if (queue === 'all') return queueRoles;
  const role = queueRoles.find((r) => r === queue || TaskQueues[r] === queue);
  if (role === undefined) {
    throw new UsageError(`--queue takes all, ${queueRoles.join(', ')} or ${queueRoles.map((r) => TaskQueues[r]).join(', ')}; got ${JSON.stringify(queue)}`);
  }
  return [role];
}

export const run: CommandRun = async (args, io) => {
  const roles = rolesFor(stringOption(args, 'queue') ?? 'all');
  const config = io.config();
  // The worker stack loads only once the queue and the configuration are known to be right.
  const { runWorkers } = await import('../../workers/run-workers');
  await runWorkers({ config, roles, log: io.err });
};
