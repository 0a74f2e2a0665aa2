import { AirlockError } from '../core/util/errors';

/** The command line was wrong; the message says what to do. */
export class UsageError extends AirlockError {
  override name = 'UsageError';
}

/** No such job, or it cannot be decided the way asked. */
export class JobError extends AirlockError {
  override name = 'JobError';
}
