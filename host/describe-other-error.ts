import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/common';
import { describeError, firstLine } from '../core/temporal/describe-error';

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
 * One line for an operator about an error that is not airlock's own: the
 * Temporal client's say what to check, anything else is described as
 * everywhere else. (`@temporalio/client` re-exports these error classes.)
 */
export function describeOtherError(err: unknown): string {
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
