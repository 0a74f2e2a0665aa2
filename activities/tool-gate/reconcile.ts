import { ApplicationFailure } from '@temporalio/activity';
import { Texts } from '../../core/job/texts';
import { FailureTypes } from '../../core/temporal/failure-types';
import { revalidateWith } from '../../core/tools/compare';
import type { ObservedState } from '../../core/tools/observed-state';
import type { AnyTool } from '../../core/tools/registry';
import type { ToolOutcome } from '../../core/tools/tool-module';
import { revealPaths, storedOutcome, type NonceStore, type Reconciled } from '../../host/stores/nonces/store';
import { keepUndoRecord, keptCall } from './keep-undo';
import type { ExecuteInput, ExecuteResult } from './messages';
import { reportEarlierOrFail } from './record';
import type { ToolRunner } from './runner';

/** One `execute` attempt as its heartbeat and metrics see it. */
export interface AttemptState {
  /** Shown in the heartbeat: checking, reconciling, effect. */
  phase: string;
  /** The nonce this attempt consumed or claimed: renewed at every beat, so no retry settles it while this attempt lives. */
  held?: string;
  /** Set when this attempt settled the call itself (not when it reports another attempt's settlement). */
  settled?: Reconciled;
}

export interface Settling {
  readonly input: ExecuteInput;
  readonly tool: AnyTool;
  readonly args: Record<string, unknown>;
  readonly fingerprint: string;
  /** The targets right before the call, when known: recorded at consume, else what the reviewer approved. */
  readonly before: readonly ObservedState[] | undefined;
  /** The nonce is consumed in this store (an attempt died after consuming); false: this store does not know it. */
  readonly consumedHere: boolean;
}

/**
 * What a settlement found: an answer for the call (it ran before, or what
 * it did is unknown, recorded either way), or its targets exactly as they
 * were before it, so its effect never happened and runs now (`before`: the
 * targets with their paths).
 */
export type Settled =
  | { readonly kind: 'answered'; readonly result: ExecuteResult }
  | { readonly kind: 'unchanged'; readonly before: readonly ObservedState[] | undefined };

/**
 * A consumed nonce without an outcome is settled only once its holder has
 * been silent this long: a live attempt renews it every heartbeat (2 s),
 * and Temporal retries only after the 15 s heartbeat timeout.
 */
const DEFAULT_CLAIM_STALE_MS = 20_000;

/** Slack past the holder's lease, so a claim does not race the clock it is timed by. */
const CLAIM_MARGIN_MS = 250;

/**
 * Takes over a consumed nonce once its holder has been silent for
 * `staleMs`. The retry that finds the holder silent for less waits here,
 * heartbeating, for the rest of the lease, instead of failing and waiting
 * out a growing retry backoff: a killed worker's call is settled about
 * `staleMs` after its last sign of life. A holder that renews meanwhile is
 * alive, and this attempt gives way (retryably) as before; so does one
 * that sees the outcome recorded meanwhile (`undefined` is returned).
 */
async function claimWhenSilent(nonces: NonceStore, nonce: string, staleMs: number): Promise<'claimed' | 'settled'> {
  let waited = false;
  for (;;) {
    if (await nonces.claim(nonce, staleMs)) return 'claimed';
    const silent = await nonces.silentFor(nonce);
    if (silent === undefined) return 'settled';
    if (waited) {
      // Renewed while this attempt waited: the holder is alive (a duplicate, or the one before is not dead yet). Look again later.
      throw ApplicationFailure.retryable('another attempt of this call is still working on it; this one will look again', FailureTypes.NonceConsumed);
    }
    waited = true;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, staleMs - silent) + CLAIM_MARGIN_MS));
  }
}

/**
 * An earlier attempt ended without an outcome in this store: it consumed
 * the nonce and died, or this store does not know what it did (a lost or
 * restored store). The target says what happened:
 * - the tool's postcondition holds: its effect is in place, record and report that;
 * - it does not, and the target is exactly as it was right before the call
 *   (the approved state): the effect never happened, and `execute` runs it now. That
 *   attempt is over: Temporal starts a new attempt only after the previous
 *   one failed or its heartbeat or start-to-close timeout passed, and an
 *   attempt Temporal gave up on starts no effect once it learns so (its
 *   next heartbeat). The remaining window: a worker process frozen or cut
 *   off from Temporal for longer than the heartbeat timeout, between its
 *   own check and its effect, which it then still runs;
 * - neither: the outcome is unknown, and is reported as such.
 */
export async function settle(runner: ToolRunner, s: Settling, attempt: AttemptState): Promise<Settled> {
  const { nonces } = runner.deps;
  const nonce = s.input.grant.claims.nonce;
  attempt.phase = 'reconciling';
  if (s.consumedHere && (await claimWhenSilent(nonces, nonce, runner.deps.claimStaleMs ?? DEFAULT_CLAIM_STALE_MS)) === 'settled') {
    return { kind: 'answered', result: await reportEarlierOrFail(nonces, nonce) };
  }
  attempt.held = nonce;
  // The targets now: the precondition compares them, and they give the store's path digests their paths back.
  const tool = s.tool;
  let current = await runner.observeTargets(tool, s.args);
  const before = s.before === undefined ? undefined : revealPaths(s.before, current.observed);
  // An entry held under this nonce proves the change ran, whatever its place shows now: its record first, so retention keeps it its full time.
  // A hold of a change that never happened is dropped instead, and the target looked at again.
  // A write a kill cut short in a root set up for undo is finished here (its copy of the content before is kept), as the approved call meant.
  if ((await keepUndoRecord(runner.undoKeeping(tool, nonce), keptCall(s.input), before, { settling: true })) === 'dropped') current = await runner.observeTargets(tool, s.args);
  const post = tool.postcondition === undefined ? { present: false, detail: `${tool.name} declares no postcondition` } : await tool.postcondition(runner.callHost(tool, nonce), s.args, before);
  // A store that does not know the nonce gets it consumed now, as the first attempt would have.
  const consumeHere = () => nonces.consume({ nonce, jobId: s.input.jobId, callId: s.input.callId, fingerprint: s.fingerprint, ...(s.before !== undefined ? { before: s.before } : {}) });
  const record = async (outcome: ToolOutcome, reconciled: Reconciled) => {
    if (!s.consumedHere && !(await consumeHere()).consumed) return false;
    await nonces.recordOutcome(nonce, storedOutcome(outcome, reconciled));
    await runner.forgetJournal(nonce);
    return true;
  };
  if (post.present) {
    const outcome = { ok: true, output: Texts.reconciledRanBefore(post.detail) };
    if (!(await record(outcome, 'ran_before'))) return { kind: 'answered', result: await reportEarlierOrFail(nonces, nonce) };
    attempt.settled = 'ran_before';
    return { kind: 'answered', result: { ...outcome, replayed: true, reconciled: 'ran_before' } };
  }
  let unchanged: string | undefined;
  if (post.undetectable === true) unchanged = 'its effect cannot be told from its target';
  else if (before === undefined) unchanged = 'nothing records the target as it was before the call';
  else {
    const targets = tool.targets(s.args);
    // The tool's own precondition; a target past the limits compares as "cannot be compared": not unchanged.
    const verdict = await revalidateWith(tool, runner.callHost(tool, nonce), { args: s.args, approved: before, now: current, targetsThen: targets, targetsNow: targets });
    if (verdict.kind !== 'ok') unchanged = verdict.reason;
  }
  // Exactly as before the call: its effect never happened, and `execute` runs it now.
  if (unchanged === undefined) return { kind: 'unchanged', before };
  const outcome = { ok: false, output: Texts.outcomeUnknown(`${post.detail}; ${unchanged}`) };
  // Spent from now on: a duplicate of this grant reports the same instead of guessing again.
  if (!(await record(outcome, 'unknown'))) return { kind: 'answered', result: await reportEarlierOrFail(nonces, nonce) };
  attempt.settled = 'unknown';
  return { kind: 'answered', result: { ...outcome, replayed: true, reconciled: 'unknown' } };
}
