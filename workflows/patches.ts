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

const PENDING_MEMO = 'airlock-pending-memo';

/** A parked job publishes its pending requests in its memo, for list views without queries. */
export function pendingInMemo(): boolean {
  return patched(PENDING_MEMO);
}

const PARALLEL_READS = 'airlock-parallel-reads';

/** Read-only calls that follow one another in a batch run together. */
export function parallelReads(): boolean {
  return patched(PARALLEL_READS);
}

const REVALIDATE_IN_EXECUTE = 'airlock-revalidate-in-execute';

/** An approved call is checked again inside its `execute` attempt instead of by a separate activity first. */
export function revalidateInExecute(): boolean {
  return patched(REVALIDATE_IN_EXECUTE);
}

const SEALED_STATE = 'airlock-sealed-state';

/**
 * The policy snapshot and the input a job continues as new with carry the
 * agent worker's seal, checked before they are used.
 */
export function sealedState(): boolean {
  return patched(SEALED_STATE);
}
