import { ActivityFailure, ChildWorkflowFailure } from '@temporalio/common';

/**
 * One line for a person about an error. A Temporal wrapper ("activity task
 * failed") says less than what it wraps, so the wrapped cause speaks; any
 * other error keeps its own first line, so nothing is hidden.
 */
export function describeError(err: unknown): string {
  let current: unknown = err;
  for (let depth = 0; depth < 5; depth++) {
    if ((current instanceof ActivityFailure || current instanceof ChildWorkflowFailure) && current.cause !== undefined) {
      current = current.cause;
      continue;
    }
    break;
  }
  const message = current instanceof Error ? current.message : String(current);
  return firstLine(message);
}

export function firstLine(text: string): string {
  return text.split('\n')[0]?.trim() ?? text;
}
