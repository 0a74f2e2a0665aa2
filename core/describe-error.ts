import { AirlockError } from './errors';

interface MaybeGrpc {
  name?: unknown;
  message?: unknown;
  code?: unknown;
  details?: unknown;
  cause?: unknown;
}

function grpcCode(err: unknown): number | undefined {
  let current: unknown = err;
  for (let depth = 0; depth < 5 && current !== null && typeof current === 'object'; depth++) {
    const code = (current as MaybeGrpc).code;
    if (typeof code === 'number') return code;
    current = (current as MaybeGrpc).cause;
  }
  return undefined;
}

/**
 * One line for an error a user can act on. airlock's own errors carry their
 * message; connection failures say what to check; anything else keeps its
 * message so nothing is hidden.
 */
export function describeError(err: unknown): string {
  if (err instanceof AirlockError) return err.message;
  const e = (err ?? {}) as MaybeGrpc;
  const message = typeof e.message === 'string' ? e.message : String(err);
  const code = grpcCode(err);
  if (
    e.name === 'TransportError' ||
    code === 14 ||
    /failed to connect|connection refused|ECONNREFUSED|transport error/i.test(message)
  ) {
    return `cannot reach the Temporal server (${firstLine(message)}); is it running? \`airlock dev\` starts one, TEMPORAL_ADDRESS points elsewhere`;
  }
  return firstLine(message);
}

function firstLine(text: string): string {
  return text.split('\n')[0]?.trim() ?? text;
}
