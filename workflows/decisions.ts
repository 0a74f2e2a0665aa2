import { ApplicationFailure, setDefaultSignalHandler, setHandler } from '@temporalio/workflow';
import { requestTarget } from '../core/job/approval-request';
import { type ApprovalRequest } from '../core/approval/approvals';
import { checkDecision, mismatchCodes, type DecisionCheck } from '../core/approval/decision-check';
import { describeError } from '../core/temporal/describe-error';
import { FailureTypes } from '../core/temporal/failure-types';
import { verify, verifyOptions } from './activities';
import type { StandingMark } from '../core/approval/standing';
import { dropStanding, keepStanding } from './standing';
import type { Job } from './job';
import { approvalDecisionSignal, decideUpdate, decisionRejectedSignal, newBuildSignal, stateQuery, type DecideResult } from './messages';

type Rejection = Extract<DecisionCheck, { ok: false }>;
type Via = 'signal' | 'update';

/**
 * The job's handlers: the state query, and decisions by signal or update.
 * Both decision paths share one check and one handler; a rejection is
 * audited and changes nothing else.
 */
export function registerHandlers(job: Job): void {
  // The descriptions are what the Web UI lists beside each name (they are in no history).
  setHandler(stateQuery, () => job.view(), { description: "The job's status, pending requests (masked) and counters; `airlock show` reads it." });
  setHandler(
    approvalDecisionSignal,
    async (payload) => {
      await applyDecision(job, payload, 'signal');
    },
    { description: 'A reviewer decision (requestId, fingerprint, nonce, decision, reviewer): prefer `npx airlock approve JOB --request ID`, which fills them in from the card.' },
  );
  // Internal, sent by the airlock client: a decision the decide update rejected, reported so the job audits it; and the
  // wake-up `airlock deploy promote` sends when a newer build is current. Taken by the default handler, which the Web UI
  // does not list among the signals a person may send.
  setDefaultSignalHandler((name, payload) => {
    if (name === decisionRejectedSignal.name) auditReportedRejection(job, payload);
    else if (name === newBuildSignal.name) job.newBuildSignals++;
  });
  setHandler(
    decideUpdate,
    async (payload): Promise<DecideResult> => {
      const check = await applyDecision(job, payload, 'update');
      // Rejected here, the update is in history and already audited: `handler` tells the client not to report it.
      if (!check.ok) throw ApplicationFailure.create({ message: check.message, type: FailureTypes.DecisionRejected, details: [check.code, 'handler'] });
      return {
        requestId: check.request.requestId,
        status: check.payload.decision === 'approve' ? 'approved' : 'denied',
        editedFingerprint: check.edit?.fingerprint ?? null,
        ...standingAnswer(job, check),
      };
    },
    {
      description: 'A reviewer decision with an answer (same payload as approvalDecision): prefer `npx airlock approve JOB --request ID`.',
      validator: (payload) => {
        const check = checkAgainst(job, payload);
        if (!check.ok) throw ApplicationFailure.create({ message: check.message, type: FailureTypes.DecisionRejected, details: [check.code, 'validator'] });
      },
    },
  );
}

function checkAgainst(job: Job, payload: unknown): DecisionCheck {
  const state = job.state;
  // Earlier batches' requests too: deciding one again is `already_decided`, not a mismatch.
  return checkDecision(state?.knownRequests() ?? [], payload, {
    jobId: job.jobId,
    scope: job.input.scope,
    now: Date.now(),
    roots: state?.snapshot.detectors.roots ?? [],
  });
}

function rejected(job: Job, check: Rejection, via: Via): Rejection {
  job.state?.countRejectedDecision();
  const data = { requestId: check.requestId, reviewer: check.reviewer, code: check.code, reason: check.message, via };
  job.audit.record(mismatchCodes.has(check.code) ? { type: 'approval_fingerprint_mismatch', data } : { type: 'approval_rejected', data });
  return check;
}

/**
 * The one handler behind the signal and the update. A signature is
 * verified by an activity, then the decision is checked again (another may
 * have landed meanwhile).
 */
async function applyDecision(job: Job, payload: unknown, via: Via): Promise<DecisionCheck> {
  let check = checkAgainst(job, payload);
  if (!check.ok) return rejected(job, check, via);
  if (check.payload.signature !== undefined || check.payload.passkey !== undefined) {
    let verified: { valid: true } | { valid: false; reason: string };
    try {
      const input = { jobId: job.jobId, payload: check.payload };
      // An activity, not a local one: its result is a history event, so handlers running side by side resume in the same order on replay.
      verified = await verify.verifyDecision.executeWithOptions({ ...verifyOptions, summary: 'verify a signed decision' }, [input]);
    } catch (err) {
      // A handler that throws would fail the job: an unverifiable signature is just a rejected decision.
      verified = { valid: false, reason: `the signature could not be verified: ${describeError(err)}` };
    }
    if (!verified.valid) {
      return rejected(job, { ok: false, code: 'signature_invalid', message: verified.reason, requestId: check.request.requestId, reviewer: check.payload.reviewer }, via);
    }
    check = checkAgainst(job, payload);
    if (!check.ok) return rejected(job, check, via);
  }
  // Kept before the decision is applied, so an approval that says it stands always does; checked again after the wait.
  let kept: StandingMark | undefined;
  if (check.payload.standing !== undefined) {
    const requestId = check.request.requestId;
    const made = await keepStanding(job, check.request, check.payload);
    if (made !== undefined) kept = { kind: 'granted', ...made };
    const again = checkAgainst(job, payload);
    if (!again.ok) {
      // The same decision may have landed meanwhile (a signal after an update that timed out): its standing approval stays.
      const applied = job.state?.knownRequests().find((r) => r.requestId === requestId);
      const carried = applied?.status === 'approved' && applied.decision.standing?.id === kept?.id;
      if (kept !== undefined && !carried) await dropStanding(job, kept.id, `its decision was not applied (${again.message})`);
      return rejected(job, again, via);
    }
    check = again;
  }
  const state = job.state;
  const { request, payload: decision, edit } = check;
  // Unreachable before the state exists (there is no request to match), but never applied without it.
  if (state === undefined) return rejected(job, { ok: false, code: 'unknown_request', message: 'the job has not started yet', requestId: request.requestId, reviewer: decision.reviewer }, via);
  const base = { reviewer: decision.reviewer, reason: decision.reason ?? null, decidedAt: Date.now() };
  const decided: ApprovalRequest =
    decision.decision === 'approve'
      ? {
          ...request,
          status: 'approved',
          decision: { decision: 'approve', ...base, editedArgs: edit?.args ?? null, editedFingerprint: edit?.fingerprint ?? null, ...(kept !== undefined ? { standing: kept } : {}) },
        }
      : { ...request, status: 'denied', decision: { decision: 'deny', ...base } };
  state.settle(decided);
  if (decided.status === 'denied') state.rememberDenied(request.fingerprint);
  job.audit.record({
    type: 'approval_decided',
    data: {
      requestId: request.requestId,
      toolName: request.toolName,
      ruleId: request.ruleId,
      decision: decision.decision,
      reviewer: decision.reviewer,
      reason: decision.reason,
      originalFingerprint: request.fingerprint,
      editedFingerprint: edit?.fingerprint,
      signed: decision.signature !== undefined || decision.passkey !== undefined,
      ...(decision.passkey !== undefined ? { signedWith: 'passkey' } : decision.signature !== undefined ? { signedWith: 'key' } : {}),
      via,
      target: requestTarget(request),
    },
  });
  return check;
}

/** A rejection a client saw on `decide` (which leaves no history): audited with the job's own verdict, never applied. */
function auditReportedRejection(job: Job, payload: unknown): void {
  const check = checkAgainst(job, payload);
  if (!check.ok) {
    rejected(job, check, 'update');
    return;
  }
  // The job would accept it now (state moved on since the client's attempt): record, do not act.
  job.audit.record({
    type: 'approval_rejected',
    data: {
      requestId: check.request.requestId,
      reviewer: check.payload.reviewer,
      code: 'reported_rejection',
      reason: 'a client reported this decision as rejected; it was not applied',
      via: 'update',
    },
  });
}

/** What the update answers of an approval that asked to stand: the kept standing approval as the job now holds it, or that it was not kept. */
function standingAnswer(job: Job, check: Extract<DecisionCheck, { ok: true }>): Pick<DecideResult, 'standing'> {
  if (check.payload.standing === undefined) return {};
  const decided = job.state?.knownRequests().find((r) => r.requestId === check.request.requestId);
  const mark = decided?.status === 'approved' ? decided.decision.standing : undefined;
  if (mark?.kind === 'granted') return { standing: { kept: true, id: mark.id, until: mark.until, uses: mark.uses } };
  return { standing: { kept: false, reason: 'the standing approval could not be kept (see the audit log); this call is approved, later ones ask again' } };
}
