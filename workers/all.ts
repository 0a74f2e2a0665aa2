import { queueRoles, type QueueRole } from '../core/temporal/task-queues';
import { main } from './main';

/** Runs the workers of every queue in one process, for development. */
export const roles: readonly QueueRole[] = queueRoles;

if (require.main === module) main(roles);
