import { Texts } from '../../core/job/texts';
import type { ObservedState } from '../../core/tools/observed-state';
import type { AnyTool } from '../../core/tools/registry';
import { storedOutcome } from '../../host/stores/nonces/store';
import { currentAttempt } from '../heartbeat';
import { checkExpiry, checkGrant, type GrantedCall } from './check-grant';
import { keepUndoRecord, keptCall } from './keep-undo';
import type { ApprovedCheck, ExecuteInput, ExecuteResult } from './messages';
import { recheck } from './recheck';
import { settle, type AttemptState } from './reconcile';
import { reportEarlier } from './record';
import { keepForUndo, type ToolRunner } from './runner';

/**
 * One attempt of `execute`, as one sequence: check the grant → look at
 * what an earlier attempt left (report its outcome, or settle it from the
 * target) → check an approved call against the world once more → consume
 * the nonce (compare-and-set) with the targets as they are right then →
 * run the tool → keep its undo record → record its outcome. Each step is a
 * leaf module of this folder; only this function goes from one to the next.
 */
export async function executeOnce(runner: ToolRunner, input: ExecuteInput, attempt: AttemptState): Promise<ExecuteResult> {
  const { nonces } = runner.deps;
  const call = checkGrant(runner.deps.verifier, input);
  const { tool, args, fingerprint } = call;
  const nonce = input.grant.claims.nonce;
  runner.lent(tool);
  const changing = tool.categoryOf(args) !== 'read';
  const approvedBefore = approvedTargets(tool, args, input.approved);
  // The nonce, taken by compare-and-set with the targets right before the effect (what a retry compares against).
  const consume = (before: readonly ObservedState[] | undefined) => nonces.consume({ nonce, jobId: input.jobId, callId: input.callId, fingerprint, ...(before !== undefined ? { before } : {}) });

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
  // An attempt died holding the nonce, or this store knows nothing of a retry (the earlier one may have consumed it in a store since lost).
  if (earlier !== undefined || (changing && currentAttempt() > 1)) {
    const before = earlier?.before ?? approvedBefore;
    const consumedHere = earlier !== undefined;
    const settled = await settle(runner, { input, tool, args, fingerprint, before, consumedHere }, attempt);
    if (settled.kind === 'answered') return settled.result;
    checkExpiry(input.grant, runner.now());
    if (!consumedHere) {
      // Consumed now, as the first attempt would have.
      const consumed = await consume(before);
      if (!consumed.consumed) return reportEarlier(consumed);
      attempt.held = nonce;
    }
    return runAndRecord(runner, input, call, settled.before, attempt, 'ran_now');
  }

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
  const consumed = await consume(before);
  if (!consumed.consumed) return reportEarlier(consumed);
  attempt.held = nonce;
  await runner.crashPoint('after-consume');
  return runAndRecord(runner, input, call, before, attempt);
}

/**
 * The effect and what follows it, once the nonce is this attempt's: run the
 * tool, keep its undo record (before the outcome, so a call with an outcome
 * that kept something has its record), record the outcome, drop the
 * journal. `ran_now`: a settlement found the effect never happened.
 */
async function runAndRecord(
  runner: ToolRunner,
  input: ExecuteInput,
  { tool, args }: GrantedCall,
  before: readonly ObservedState[] | undefined,
  attempt: AttemptState,
  reconciled?: 'ran_now',
): Promise<ExecuteResult> {
  const nonce = input.grant.claims.nonce;
  attempt.phase = 'effect';
  const outcome = await runner.runTool(tool, args, before, input.grant.claims, keepForUndo(input.approved));
  await runner.crashPoint('after-effect');
  await keepUndoRecord(runner.undoKeeping(tool, nonce), keptCall(input), before);
  await runner.deps.nonces.recordOutcome(nonce, storedOutcome(outcome, reconciled));
  await runner.forgetJournal(nonce);
  if (reconciled === undefined) return { ...outcome, replayed: false };
  attempt.settled = reconciled;
  return { ok: outcome.ok, output: `${outcome.output}\n${Texts.reconciledRanNow}`, replayed: false, reconciled };
}

/** The approved targets, by position, where the call still acts on them (an edit may have replaced one). */
function approvedTargets(tool: AnyTool, args: Record<string, unknown>, approved: ApprovedCheck | undefined): ObservedState[] | undefined {
  if (approved === undefined) return undefined;
  const now = tool.targets(args);
  const then = approved.originalTargets ?? now;
  if (now.length !== approved.observed.length || now.some((t, i) => then[i] !== t)) return undefined;
  return [...approved.observed];
}
