import type { QueueRole } from '../core/temporal/task-queues';
import { main } from './main';

/** Runs the airlock-judge worker. */
export const roles: readonly QueueRole[] = ['judge'];

if (require.main === module) main(roles);
