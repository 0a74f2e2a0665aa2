import { WorkflowExecutionAlreadyStartedError, WorkflowNotFoundError } from '@temporalio/common';
import { describeError, firstLine } from '../../core/temporal/describe-error';

const GRPC_DEADLINE_EXCEEDED = 4;
const GRPC_UNAVAILABLE = 14;
const CONNECTION_WORDS = /failed to connect|connection refused|ECONNREFUSED|transport error/i;

/**
 * The Temporal server is not there: a transport error, a refused
 * connection, or gRPC UNAVAILABLE, here or in what the error wraps (the
 * first gRPC status found decides). With `deadlineExceeded`, a call that
 * ran out of time (DEADLINE_EXCEEDED) counts too: the approval page treats
 * a server that does not answer as one that is down and keeps serving,
 * where the CLI reports a passed deadline as what it is.
 */
export function temporalUnreachable(err: unknown, options: { readonly deadlineExceeded?: boolean } = {}): boolean {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && current !== null && typeof current === 'object'; depth++) {
    const { name, message, code, cause } = current as { name?: unknown; message?: unknown; code?: unknown; cause?: unknown };
    if (name === 'TransportError' || code === 'ECONNREFUSED') return true;
    if (typeof message === 'string' && CONNECTION_WORDS.test(message)) return true;
    if (typeof code === 'number') return code === GRPC_UNAVAILABLE || (options.deadlineExceeded === true && code === GRPC_DEADLINE_EXCEEDED);
    current = cause;
  }
  return false;
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
  if (temporalUnreachable(err)) {
    return (
      `cannot reach the Temporal server (${firstLine(err instanceof Error ? err.message : String(err))}); is it running? \`airlock dev\` starts one, TEMPORAL_ADDRESS points elsewhere; ` +
      'a server that wants TLS or a client certificate needs TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH and TEMPORAL_TLS_SERVER_CA_CERT_PATH (or TEMPORAL_API_KEY, or a TEMPORAL_PROFILE)'
    );
  }
  return describeError(err);
}
