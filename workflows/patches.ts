import { patched } from '@temporalio/workflow';

/**
 * Where the job's commands changed since histories were first recorded.
 * A job that started under an older build replays through the old branch
 * and switches at the first live step; new jobs record the patch marker.
 * When no job from before a patch can still be running, replace `patched`
 * by `deprecatePatch` for one release, then drop the old branch and its
 * recorded histories.
 */
const ONE_EVALUATION_PATH = 'airlock-one-evaluation-path';

/**
 * Every batch (with or without tool calls, and the completion gate) is
 * decided by the policy activity, grants are issued on the way to
 * `execute`, and buffered audit events ride on those activities instead of
 * a flush after each batch.
 */
export function oneEvaluationPath(): boolean {
  return patched(ONE_EVALUATION_PATH);
}

const SCALE_PATH = 'airlock-scale-path';

/**
 * A run that starts on this build: a parked job publishes its pending
 * requests in its memo (list views need no query), read-only calls that
 * follow one another in a batch run together, and an approved call is
 * checked again inside its `execute` attempt instead of by a separate
 * activity first. Asked once, when the run starts: a patch first asked
 * right after a local activity can fall in another workflow task on replay
 * than it did live.
 */
export function scalePath(): boolean {
  return patched(SCALE_PATH);
}

const SEALED_STATE = 'airlock-sealed-state';

/**
 * The policy snapshot and the input a job continues as new with carry the
 * agent worker's seal, checked before they are used.
 */
export function sealedState(): boolean {
  return patched(SEALED_STATE);
}

const SEAL_ASKED_AT_START = 'airlock-seal-asked-at-start';

/**
 * A run that starts on this build asks `sealedState` when it starts, so
 * that marker lands in the first workflow task. Asked first at
 * continue-as-new, right after local activities, it could fall in another
 * workflow task on replay than it did live, answer "not sealed", and the
 * next run refused its unsealed state: the job failed.
 */
export function sealAskedAtStart(): boolean {
  return patched(SEAL_ASKED_AT_START);
}

const DURABLE_AUDIT = 'airlock-durable-audit';

/**
 * Audit events whose write failed stay in the job and are written again
 * later: with the next write, by a timer while parked, and a few times
 * (with timers between) before the job ends or continues as new, which
 * carries what is still unwritten. Asked once, when the run starts, like
 * `scalePath`.
 */
export function durableAudit(): boolean {
  return patched(DURABLE_AUDIT);
}

const CANCELLED_STATUS = 'airlock-cancelled-status';

/**
 * A cancelled job (from the Web UI, `temporal workflow cancel` or a client)
 * sets `AirlockStatus` to `cancelled`, drains its handlers and writes its
 * audit before it ends as cancelled. Asked once, when the run starts, like
 * `scalePath`.
 */
export function cancelledStatus(): boolean {
  return patched(CANCELLED_STATUS);
}

const PASSKEY_DECISIONS = 'airlock-passkey-decisions';

/**
 * Decisions may carry a passkey assertion instead of an Ed25519 signature.
 * A run from before refused such a payload as having an unknown key, and
 * replays so. Asked once, when the run starts, like `scalePath`.
 */
export function passkeyDecisions(): boolean {
  return patched(PASSKEY_DECISIONS);
}

const READS_BEFORE_LOCAL_ACTIVITY = 'airlock-reads-before-local-activity';

/**
 * While parked, the job reads the time, its pending requests and whether
 * to continue as new before it writes audit events (a local activity),
 * not after. When a query is answered while a local activity runs, the
 * worker hands the activity's result to the workflow in a later workflow
 * task than the one that recorded it; a replay hands it over in the
 * earlier one. History length, time and what signals changed can then
 * differ after the activity between the run and its replay, and the job
 * continued as new in one and not in the other. Asked once, when the run
 * starts, like `scalePath`.
 */
export function readsBeforeLocalActivity(): boolean {
  return patched(READS_BEFORE_LOCAL_ACTIVITY);
}

const DECISIONS_VERIFIED_BY_ACTIVITY = 'airlock-decisions-verified-by-activity';

/**
 * A signed decision's signature is verified by an activity on the agent
 * queue, not a local activity. Decision handlers run side by side: when
 * two awaited local activities at once, the worker handed their results to
 * the workflow in one activation or in two, depending on when each
 * finished, while a replay hands both over in one. What a handler did
 * after its result (settle the request, wake the job, reject the late
 * decision) then came in another order than recorded, and the job failed
 * replay (`Update machine does not handle this event: TimerCanceled`).
 * An activity's result is an event in history: live and replay get it in
 * the same workflow task. Asked once, when the run starts, like
 * `scalePath`; a run from before keeps the local activity.
 */
export function decisionsVerifiedByActivity(): boolean {
  return patched(DECISIONS_VERIFIED_BY_ACTIVITY);
}

const CANONICAL_ARGS_CHECKED = 'airlock-canonical-args-checked';

/**
 * A call's arguments pass the tool's schema again once its paths are
 * canonical (made absolute inside the roots); one that fails then is an
 * ordinary error result, instead of failing on the tools worker (where a
 * run from before retried it). Asked once, when the run starts.
 */
export function canonicalArgsChecked(): boolean {
  return patched(CANONICAL_ARGS_CHECKED);
}

/** What a run follows of each change since histories were first recorded, asked once when it starts. */
export interface RunPatches {
  readonly scalePath: boolean;
  readonly durableAudit: boolean;
  readonly cancelledStatus: boolean;
  readonly passkeyDecisions: boolean;
  readonly readsBeforeLocalActivity: boolean;
  readonly decisionsVerifiedByActivity: boolean;
  readonly canonicalArgsChecked: boolean;
}

/**
 * Asks every run-level patch in the order runs have always asked them, so
 * their markers land in the first workflow task in a fixed order. A new
 * patch is added at the end.
 */
export function askRunPatches(): RunPatches {
  const scale = scalePath();
  const audit = durableAudit();
  const cancelled = cancelledStatus();
  if (sealAskedAtStart()) sealedState();
  const passkeys = passkeyDecisions();
  const reads = readsBeforeLocalActivity();
  return {
    scalePath: scale,
    durableAudit: audit,
    cancelledStatus: cancelled,
    passkeyDecisions: passkeys,
    readsBeforeLocalActivity: reads,
    decisionsVerifiedByActivity: decisionsVerifiedByActivity(),
    canonicalArgsChecked: canonicalArgsChecked(),
  };
}
