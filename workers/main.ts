import { parseConfig } from '../core/config/config';
import type { QueueRole } from '../core/temporal/task-queues';
import { describeOperatorError } from '../host/operator-errors';
import { runWorkers } from './run-workers';

/** Entry point shared by the per-queue worker scripts. */
export function main(roles: readonly QueueRole[]): void {
  const run = async () => runWorkers({ config: parseConfig(process.env), roles });
  run().then(
    () => process.exit(0),
    (err: unknown) => {
      process.stderr.write(`airlock worker: ${describeOperatorError(err)}\n`);
      process.exit(1);
    },
  );
}
