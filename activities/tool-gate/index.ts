import { ApplicationFailure } from '@temporalio/activity';
import { FailureTypes } from '../../core/temporal/failure-types';
import { DatabaseUnavailable } from '../../host/stores/database/postgres';
import { NonceStoreUnusable } from '../../host/stores/nonces/store';
import { withHeartbeat } from '../heartbeat';
import { noMetrics } from '../metrics';
import { executeOnce } from './execute';
import { prepareCall } from './prepare';
import type { ExecuteInput, ExecuteResult, PrepareApprovalInput, PrepareApprovalResult, RevalidateInput, RevalidateResult } from './messages';
import { recheck } from './recheck';
import type { AttemptState } from './reconcile';
import { executionOutcome } from './record';
import { createToolRunner, onThisMachine, type ToolGateDeps, type ToolRunner } from './runner';

/**
 * The tool gate's activities on the tools queue, where the side effects
 * happen: `prepareApproval` when a call parks, `revalidate` and `execute`
 * when it runs. `execute.ts` is the one sequence (check grant → earlier
 * attempt → recheck → consume → run → keep undo → record); every other
 * module is a step it calls and that calls no other step back:
 * `check-grant` (the grant binds exactly this call), `recheck` (the world
 * still matches what the reviewer saw), `reconcile` (claim a nonce an
 * attempt died holding and tell from the target what happened),
 * `keep-undo` (the undo record, from plain data), `record` (stored outcomes
 * as results), over the `runner`, the worker's hands.
 */

export type * from './messages';
export type { ToolGateDeps } from './runner';
export { createToolRunner, executionOutcome, prepareCall };

/** `runner`: the worker's hands, when another of its activities shares them (`resolveTargets` prepares with them too). */
export function createToolGateActivities(deps: ToolGateDeps, runner: ToolRunner = createToolRunner(deps)) {
  const metrics = deps.metrics ?? noMetrics;

  return {
    /** Captures what the reviewer will approve: the target's state now, plus the request's nonce. */
    async prepareApproval(input: PrepareApprovalInput): Promise<PrepareApprovalResult> {
      return withHeartbeat(
        () => ({ phase: 'observing' }),
        () => prepareCall(runner, input),
      );
    },

    /** Schema, permission and preconditions, checked again against the world as it is now (builds before checked inside `execute`). */
    async revalidate(input: RevalidateInput): Promise<RevalidateResult> {
      return withHeartbeat(
        () => ({ phase: 'observing' }),
        async () => {
          onThisMachine(deps, input.machine);
          return (await recheck(runner, input)).result;
        },
      );
    },

    /**
     * Runs one granted call, once. The nonce is consumed (compare-and-set)
     * before the side effect, with the targets as they were right then; a
     * retry finds it and reports the stored outcome, or, when the attempt
     * that consumed it died before recording one, reconciles (`settle`).
     */
    async execute(input: ExecuteInput): Promise<ExecuteResult> {
      onThisMachine(deps, input.machine);
      const attempt: AttemptState = { phase: 'checking' };
      const result = await withHeartbeat(
        () => {
          // A renewal that fails (the database restarting) is a missed beat; the lease outlasts a few.
          if (attempt.held !== undefined) deps.nonces.renew(attempt.held).catch(() => undefined);
          return { phase: attempt.phase, store: deps.nonces.id };
        },
        () =>
          executeOnce(runner, input, attempt).catch((err: unknown) => {
            if (err instanceof NonceStoreUnusable) throw ApplicationFailure.retryable(err.message, FailureTypes.NonceStoreUnusable);
            if (err instanceof DatabaseUnavailable) throw ApplicationFailure.retryable(err.message, FailureTypes.StoreUnavailable);
            throw err;
          }),
      );
      // Counted once the attempt has its answer; an attempt that throws is the SDK's `temporal_activity_execution_failed`.
      if (attempt.settled !== undefined) metrics.reconciled(input.toolName, attempt.settled);
      metrics.executed(input.toolName, executionOutcome(result, attempt.settled));
      return result;
    },
  };
}

export type ToolGateActivities = ReturnType<typeof createToolGateActivities>;
