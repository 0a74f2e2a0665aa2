import type { QueueRole } from '../core/temporal/task-queues';
import { main } from './main';

/** Runs the airlock-agent worker. */
export const roles: readonly QueueRole[] = ['agent'];

if (require.main === module) main(roles);
