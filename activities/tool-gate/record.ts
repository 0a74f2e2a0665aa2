import { ApplicationFailure } from '@temporalio/activity';
import { Texts } from '../../core/job/texts';
import { FailureTypes } from '../../core/temporal/failure-types';
import type { NonceStore, Reconciled, StoredOutcome } from '../../host/stores/nonces/store';
import type { ExecutionOutcome } from '../metrics';
import type { ExecuteResult } from './messages';

/**
 * What the store says of a call that already ran is what `execute` reports:
 * the stored outcome (the store keeps no tool output), or, while another
 * attempt still holds the nonce, a retry that looks again later.
 */
export function reportEarlier(earlier: { outcome: StoredOutcome | null; consumedAt: string }): ExecuteResult {
  if (earlier.outcome !== null) {
    const { ok, outputBytes, reconciled } = earlier.outcome;
    if (reconciled === 'unknown') {
      return { ok: false, output: Texts.outcomeUnknown(`settled at an earlier retry; the call was first attempted at ${earlier.consumedAt}`), replayed: true, reconciled };
    }
    // The store keeps no tool output: the earlier attempt's result is reported, its output is not.
    return {
      ok,
      output: `This call already ran at ${earlier.consumedAt} (${ok ? 'it succeeded' : 'it failed'}, ${outputBytes} bytes of output, not kept).`,
      replayed: true,
      ...(reconciled !== undefined ? { reconciled } : {}),
    };
  }
  // Only a concurrent attempt gets here (its consume won between this one's look and its own).
  throw ApplicationFailure.retryable(`this call is being run by another attempt since ${earlier.consumedAt}; this one will look again`, FailureTypes.NonceConsumed);
}

/** Another attempt settled the nonce between this one's look and its write. */
export async function reportEarlierOrFail(nonces: NonceStore, nonce: string): Promise<ExecuteResult> {
  const earlier = await nonces.lookup(nonce);
  if (earlier === undefined) throw ApplicationFailure.retryable(`nonce ${nonce} vanished from the store while settling`, FailureTypes.NonceConsumed);
  return reportEarlier(earlier);
}

/**
 * How an `execute` ended, for the metrics: refused before running; settled
 * from the target by this attempt; another attempt's stored outcome
 * reported again; or run now, with the tool's own success.
 */
export function executionOutcome(result: ExecuteResult, settledNow: Reconciled | undefined): ExecutionOutcome {
  if (result.refused !== undefined || result.notNeeded !== undefined) return 'refused';
  if (settledNow !== undefined) return settledNow;
  if (result.replayed) return 'replayed';
  return result.ok ? 'ok' : 'failed';
}
