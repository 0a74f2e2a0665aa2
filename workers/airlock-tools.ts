import type { QueueRole } from '../core/temporal/task-queues';
import { main } from './main';

/** Runs the airlock-tools worker. */
export const roles: readonly QueueRole[] = ['tools'];

if (require.main === module) main(roles);
