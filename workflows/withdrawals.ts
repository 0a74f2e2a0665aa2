import type { PreflightedCall } from '../core/job/preflight';
import { issuesText } from '../core/util/errors';
import { ApplicationFailure, setHandler } from '@temporalio/workflow';
import { withdrawInputSchema, type PendingRequest, type WithdrawInput } from '../core/approval/approvals';
import { requestTarget } from '../core/job/approval-request';
import type { SubmitCallInput } from '../core/job/client-calls';
import { Texts } from '../core/job/texts';
import { FailureTypes } from '../core/temporal/failure-types';
import type { Job } from './job';
import type { JobState } from './job-state';
import { withdrawRequestsUpdate } from './messages';

/**
 * An operator's withdrawal (`withdrawRequests`, sent by `airlock agent
 * revoke`): every request that waits for a reviewer ends as withdrawn (not
 * run, answered so, audited). In a client-driven job it also reaches the
 * agent's calls that no reviewer was asked about yet: those still in the
 * inbox are answered withdrawn, and a request that parks later for a call
 * the job was evaluating when the withdrawal came is withdrawn as soon as
 * it parks. A call already found allowed and running is not stopped.
 */

/** What a client-driven job shares with the withdrawal: its inbox, and the calls it has taken from it and not yet answered or parked. */
export interface ClientCalls {
  /** Calls accepted and not yet taken by the loop; the loop empties it before it continues as new. */
  readonly inbox: SubmitCallInput[];
  inFlight: ReadonlySet<string>;
  /** Calls of the inbox as the update's validator preflighted them, with the roots it saw. */
  readonly preflighted: WeakMap<SubmitCallInput, Preflighted>;
}

export interface Preflighted {
  readonly roots: readonly string[] | undefined;
  readonly call: PreflightedCall;
}

interface Withdrawal extends WithdrawInput {
  readonly decidedAt: number;
}

export interface Withdrawals {
  /** A request parked since for a call that was in flight when a withdrawal came: withdrawn now, as that withdrawal. */
  settleLate(state: JobState): void;
}

export function registerWithdrawals(job: Job, client?: ClientCalls): Withdrawals {
  // Run-local: a call in flight is answered or parked before the run continues as new.
  const late = new Map<string, Withdrawal>();
  setHandler(
    withdrawRequestsUpdate,
    (raw) => {
      const w: Withdrawal = { ...withdrawInputSchema.parse(raw), decidedAt: Date.now() };
      const state = job.state;
      if (state === undefined) return { withdrawn: [], calls: [] };
      const withdrawn = state.pendingRequests().map((r) => withdrawRequest(job, state, r, w));
      if (client === undefined) return { withdrawn, calls: [] };
      const calls = client.inbox.splice(0).map((c) => {
        state.setClientCall({ status: 'answered', callKey: c.callKey, toolName: c.toolName, text: Texts.withdrawn(w.by, w.reason), isError: true, at: w.decidedAt });
        return c.callKey;
      });
      for (const key of client.inFlight) late.set(key, w);
      return { withdrawn, calls: [...calls, ...client.inFlight] };
    },
    {
      description: "Ends every request of this job that waits for a reviewer as withdrawn (not run): `airlock agent revoke` sends it for a revoked agent's job.",
      validator: (raw) => {
        const parsed = withdrawInputSchema.safeParse(raw);
        if (!parsed.success) throw ApplicationFailure.create({ message: `invalid withdrawal: ${issuesText(parsed.error.issues)}`, type: FailureTypes.InvalidInput, nonRetryable: true });
      },
    },
  );
  return {
    settleLate(state) {
      for (const r of state.pendingRequests()) {
        const w = late.get(r.callId);
        if (w !== undefined) withdrawRequest(job, state, r, w);
      }
      late.clear();
    },
  };
}

/** Settles one waiting request as withdrawn, audited; its fingerprint is not remembered as denied (a reviewer never said no to it). */
function withdrawRequest(job: Job, state: JobState, r: PendingRequest, w: Withdrawal): string {
  state.settle({ ...r, status: 'denied', decision: { decision: 'deny', reviewer: w.by, reason: w.reason, decidedAt: w.decidedAt, withdrawn: true } });
  job.audit.record({ type: 'approval_withdrawn', data: { requestId: r.requestId, toolName: r.toolName, ruleId: r.ruleId, fingerprint: r.fingerprint, by: w.by, reason: w.reason, target: requestTarget(r) } });
  return r.requestId;
}
