import { AirlockError } from '../core/util/errors';
import type { describeOtherError } from './temporal/describe-other-error';

/** Required on first need: airlock's own errors (a CLI usage error) are described without loading Temporal's packages. */
function otherErrors(): { describeOtherError: typeof describeOtherError } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a static import would load @temporalio/common for `airlock --help`
  return require('./temporal/describe-other-error') as { describeOtherError: typeof describeOtherError };
}

/**
 * One line for an operator (CLI, worker start-up): airlock's own errors
 * carry their message, the Temporal client's say what to check, anything
 * else is described as everywhere else.
 */
export function describeOperatorError(err: unknown): string {
  if (err instanceof AirlockError) return err.message;
  return otherErrors().describeOtherError(err);
}
