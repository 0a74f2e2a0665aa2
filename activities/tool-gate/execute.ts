import { Texts } from '../../core/job/texts';
import type { ObservedState } from '../../core/tools/observed-state';
import type { AnyTool } from '../../core/tools/registry';
import { storedOutcome } from '../../host/stores/nonces/store';
import { currentAttempt } from '../heartbeat';
import { checkExpiry, checkGrant } from './check-grant';
import { keepUndoRecord } from './keep-undo';
import type { ApprovedCheck, ExecuteInput, ExecuteResult } from './messages';
import { recheck } from './recheck';
import { settle, type AttemptState } from './reconcile';
import { reportEarlier } from './record';
import { keepForUndo, type ToolRunner } from './runner';

/**
 * One attempt of `execute`, step by step: check the grant; report a call
 * the store says already ran; settle one an earlier attempt left without an
 * outcome (`settle`); otherwise check an approved call against the world
 * once more, consume the nonce (compare-and-set) with the targets as they
 * are right then, run the tool, and record its outcome.
 */
export async function executeOnce(runner: ToolRunner, input: ExecuteInput, attempt: AttemptState): Promise<ExecuteResult> {
  const { nonces } = runner.deps;
  const { tool, args, fingerprint } = checkGrant(runner.deps.verifier, input);
  const nonce = input.grant.claims.nonce;
  runner.lent(tool);
  const changing = tool.categoryOf(args) !== 'read';
  const approvedBefore = approvedTargets(tool, args, input.approved);
  // A retry of an attempt that ran reports it: the target changed because the call ran.
  const earlier = await nonces.lookup(nonce);
  if (earlier !== undefined && earlier.outcome !== null) return reportEarlier(earlier);
  if (earlier !== undefined && !changing) {
    // A read whose attempt died changed nothing: it reads again.
    const outcome = await runner.runTool(tool, args, undefined, input.grant.claims);
    await nonces.recordOutcome(nonce, storedOutcome(outcome));
    await runner.forgetJournal(nonce);
    return { ...outcome, replayed: false };
  }
  if (earlier !== undefined) return settle(runner, { input, tool, args, fingerprint, before: earlier.before ?? approvedBefore, consumedHere: true }, attempt);
  // A retry this store knows nothing about: the earlier attempt may have consumed the nonce in a store since lost.
  if (changing && currentAttempt() > 1) return settle(runner, { input, tool, args, fingerprint, before: approvedBefore, consumedHere: false }, attempt);
  checkExpiry(input.grant, runner.now());
  let before: ObservedState[] | undefined;
  if (input.approved !== undefined) {
    const check = await recheck(runner, { ...input.approved, toolName: input.toolName, args: input.args });
    if (!check.result.ok && check.result.notNeeded === true) return { notNeeded: check.result.reason, ok: true, output: Texts.notNeeded(check.result.reason), replayed: false };
    if (!check.result.ok) return { refused: check.result.reason, ok: false, output: '', replayed: false };
    before = check.seen;
  } else if (changing) {
    // What a retry compares against, should this attempt die between consuming and recording.
    before = (await runner.observeTargets(tool, args)).observed;
  }
  const consumed = await nonces.consume({ nonce, jobId: input.jobId, callId: input.callId, fingerprint, ...(before !== undefined ? { before } : {}) });
  if (!consumed.consumed) return reportEarlier(consumed);
  attempt.held = nonce;
  await runner.crashPoint('after-consume');
  attempt.phase = 'effect';
  const outcome = await runner.runTool(tool, args, before, input.grant.claims, keepForUndo(input.approved));
  await runner.crashPoint('after-effect');
  await keepUndoRecord(runner, input, before);
  await nonces.recordOutcome(nonce, storedOutcome(outcome));
  await runner.forgetJournal(nonce);
  return { ...outcome, replayed: false };
}

/** The approved targets, by position, where the call still acts on them (an edit may have replaced one). */
function approvedTargets(tool: AnyTool, args: Record<string, unknown>, approved: ApprovedCheck | undefined): ObservedState[] | undefined {
  if (approved === undefined) return undefined;
  const now = tool.targets(args);
  const then = approved.originalTargets ?? now;
  if (now.length !== approved.observed.length || now.some((t, i) => then[i] !== t)) return undefined;
  return [...approved.observed];
}
