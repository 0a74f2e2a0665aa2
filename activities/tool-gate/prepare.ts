import { randomBytes, randomUUID } from 'node:crypto';
import type { PrepareApprovalInput, PrepareApprovalResult } from './messages';
import { argsOrFail, onThisMachine, toolOrFail, type ToolRunner } from './runner';

/**
 * What the reviewer will approve: the call's targets as they are now, a
 * preview of what it would change, and the request's nonce. Asked by
 * `prepareApproval` when a call parks, and by `resolveTargets` for the
 * calls whose facts policy needs (most of which park), so such a call is
 * observed once, in one tools round trip.
 */
export async function prepareCall(runner: ToolRunner, input: PrepareApprovalInput): Promise<PrepareApprovalResult> {
  onThisMachine(runner.deps, input.machine);
  const tool = toolOrFail(input.toolName);
  const args = argsOrFail(tool, input.args);
  const { observed, warnings, undo } = await runner.observeTargets(tool, args);
  // A preview that cannot be made leaves the card without it; it never stops the request.
  const preview = await runner.previewOf(tool, args, observed).catch(() => undefined);
  return { requestId: randomUUID(), nonce: randomBytes(16).toString('hex'), observed, warnings, ...(preview !== undefined ? { preview } : {}), ...(undo !== undefined ? { undo } : {}) };
}
