import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/client';
import { describeError, firstLine } from '../core/describe-error';
import { AirlockError } from '../core/errors';

interface MaybeGrpc {
  name?: unknown;
  message?: unknown;
  code?: unknown;
  cause?: unknown;
}

const GRPC_UNAVAILABLE = 14;

function grpcCode(err: unknown): number | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && current !== null && typeof current === 'object'; depth++) {
    const { code, cause }: MaybeGrpc = current;
    if (typeof code === 'number') return code;
    current = cause;
  }
  return undefined;
}

function unreachable(err: unknown): boolean {
  const { name, message }: MaybeGrpc = err !== null && typeof err === 'object' ? err : {};
  return (
    name === 'TransportError' ||
    grpcCode(err) === GRPC_UNAVAILABLE ||
    (typeof message === 'string' && /failed to connect|connection refused|ECONNREFUSED|transport error/i.test(message))
  );
}

/**
 * One line for an operator (CLI, worker start-up): airlock's own errors
 * carry their message, the Temporal client's say what to check, anything
 * else is described as everywhere else.
 */
export function describeOperatorError(err: unknown): string {
  if (err instanceof AirlockError) return err.message;
  if (err instanceof WorkflowNotFoundError) {
    return `no job ${err.workflowId ?? ''} in this namespace; list jobs with \`airlock pending\``.replace('  ', ' ');
  }
  if (err instanceof WorkflowExecutionAlreadyStartedError) {
    return `a job with id ${err.workflowId} already exists; choose another --id`;
  }
  if (unreachable(err)) {
    return `cannot reach the Temporal server (${firstLine(err instanceof Error ? err.message : String(err))}); is it running? \`airlock dev\` starts one, TEMPORAL_ADDRESS points elsewhere`;
  }
  return describeError(err);
}
