import { revalidateWith } from '../../core/tools/compare';
import { lendHost } from '../../core/tools/lend';
import type { ObservedState } from '../../core/tools/observed-state';
import { getTool } from '../../core/tools/registry';
import type { RevalidateInput, RevalidateResult } from './messages';
import { notConfigured, type ToolRunner } from './runner';

export interface Recheck {
  readonly result: RevalidateResult;
  /** On success, the targets as seen now: what a retry compares against should this attempt die. */
  readonly seen?: ObservedState[];
}

/**
 * An approved call checked again against the world as it is now: the
 * schema, permission (the tool is still allowed, the reviewer may approve
 * it, and is not the requester where the rule says so) and preconditions
 * (the targets are still what the reviewer saw, or the tool says the call
 * has nothing left to do).
 */
export async function recheck(runner: ToolRunner, input: RevalidateInput): Promise<Recheck> {
  const tool = getTool(input.toolName);
  if (tool === undefined || tool.category === 'control') return { result: { ok: false, reason: `tool ${input.toolName} is no longer registered` } };
  const parsed = tool.parameters.safeParse(input.args);
  if (!parsed.success) {
    return { result: { ok: false, reason: `the arguments no longer pass the tool's schema: ${parsed.error.issues[0]?.message ?? ''}` } };
  }
  if (!input.allowedTools.includes(input.toolName)) {
    return { result: { ok: false, reason: `tool ${input.toolName} is not allowed for this job` } };
  }
  if (input.reviewers !== null && !input.reviewers.includes(input.reviewer)) {
    return { result: { ok: false, reason: `reviewer ${input.reviewer} is not allowed to approve this call` } };
  }
  if (input.separateRequester && input.reviewer === input.requester) {
    return { result: { ok: false, reason: `the requester ${input.requester} may not approve their own call` } };
  }
  const loan = lendHost(tool, runner.host);
  if (!loan.ok) return { result: { ok: false, reason: notConfigured(tool, loan.missing) } };
  const targetsNow = tool.targets(parsed.data);
  const then = input.originalArgs === undefined ? undefined : tool.parameters.safeParse(input.originalArgs);
  if (then !== undefined && !then.success) return { result: { ok: false, reason: `the approved arguments no longer pass the tool's schema: ${then.error.issues[0]?.message ?? ''}` } };
  const targetsThen = input.originalTargets ?? (then === undefined ? targetsNow : tool.targets(then.data));
  const current = await runner.observeTargets(tool, parsed.data);
  const verdict = await revalidateWith(tool, loan.host, { args: parsed.data, approved: input.observed, now: current, targetsThen, targetsNow });
  if (verdict.kind === 'changed') return { result: { ok: false, reason: verdict.reason } };
  if (verdict.kind === 'not_needed') return { result: { ok: false, reason: verdict.reason, notNeeded: true } };
  return { result: { ok: true }, seen: current.observed };
}
