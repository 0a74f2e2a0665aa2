import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import { describeError } from '../core/describe-error';
import { AirlockError } from '../core/errors';

/** The command line was wrong; the message says what to do. */
export class UsageError extends AirlockError {
  override name = 'UsageError';
}

/** No such job, or it cannot be decided the way asked. */
export class JobError extends AirlockError {
  override name = 'JobError';
}

/** One line for a CLI user, including Temporal client errors. */
export function describeCliError(err: unknown): string {
  if (err instanceof WorkflowNotFoundError) {
    return `no job ${err.workflowId ?? ''} in this namespace; list jobs with \`airlock pending\``.replace('  ', ' ');
  }
  if (err instanceof WorkflowExecutionAlreadyStartedError) {
    return `a job with id ${err.workflowId} already exists; choose another --id`;
  }
  return describeError(err);
}
