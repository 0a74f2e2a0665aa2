import { defineQuery, defineSignal, defineUpdate } from '@temporalio/workflow';
import type { DecisionPayload, WithdrawInput } from '../core/approval/approvals';
import { NEW_BUILD_SIGNAL } from '../core/temporal/deployments';
import type { AgentJobStateView } from '../core/job/job-view';
import type { ClientCallView, SubmitCallInput } from '../core/job/client-calls';

/**
 * Every signal, update and query of `agentJob`. Clients import these
 * definitions; nothing is sent by a bare string.
 */

/** A reviewer's decision, fire-and-forget. A rejected one is audited and changes nothing. */
export const approvalDecisionSignal = defineSignal<[DecisionPayload]>('approvalDecision');

export interface DecideResult {
  readonly requestId: string;
  readonly status: 'approved' | 'denied';
  /** Set when the approval edited the call. */
  readonly editedFingerprint: string | null;
  /** Present when the approval asked to stand for later calls: kept (its id, end and uses), or why not. */
  readonly standing?: { readonly kept: true; readonly id: string; readonly until: number; readonly uses: number } | { readonly kept: false; readonly reason: string };
}

/** The same decision with a synchronous answer: its validator rejects exactly what the signal path rejects. */
export const decideUpdate = defineUpdate<DecideResult, [DecisionPayload]>('decide');

/**
 * A client reports a decision the `decide` validator rejected (rejected
 * updates leave no trace in history). The job re-checks and audits it; it
 * never applies a decision, whatever the payload says.
 */
export const decisionRejectedSignal = defineSignal<[DecisionPayload]>('decisionRejected');

/**
 * Ends every request of the job that waits for a reviewer as withdrawn (not
 * run, answered so, audited): an operator's way to take back what an agent
 * asked once the agent is no longer trusted (`airlock agent revoke`). It only
 * keeps calls from running, so it carries no signature. Answers with the
 * requests it ended, and a client-driven job's calls it ended before any
 * reviewer was asked (their keys); none is no error.
 */
export const withdrawRequestsUpdate = defineUpdate<{ readonly withdrawn: readonly string[]; readonly calls?: readonly string[] }, [WithdrawInput]>('withdrawRequests');

/** Status, pending requests (masked arguments) and counters. */
export const stateQuery = defineQuery<AgentJobStateView>('state');

/**
 * A newer build became current (`airlock deploy promote` / `wake`): a parked
 * job wakes and, if the server says its target build changed, continues as
 * new onto it. Carries nothing; from anyone else it wakes the job for nothing.
 */
export const newBuildSignal = defineSignal(NEW_BUILD_SIGNAL);

/**
 * A call from the client that drives the job (`driver: 'client'`, the MCP
 * gateway): it goes through the same gate as a model's call. Answers once
 * the call is answered or parked; sent again with the same `callKey` it
 * gives the same answer, and the same tool and arguments while one waits
 * for a reviewer attach to that request instead of asking twice.
 */
export const submitCallUpdate = defineUpdate<ClientCallView, [SubmitCallInput]>('submitCall');

/** What became of a client's call, by its key; null when the job does not know it. */
export const clientCallQuery = defineQuery<ClientCallView | null, [{ readonly callKey: string }]>('clientCall');

/** A client-driven job's calls that wait for a reviewer, then the latest answered ones (at most 50 in all). */
export const clientCallsQuery = defineQuery<ClientCallView[]>('clientCalls');
