import { isCancellation } from '@temporalio/workflow';
import { requestTarget } from '../core/job/approval-request';
import type { ApprovalRequest, DecisionPayload, PendingRequest } from '../core/approval/approvals';
import { describeError } from '../core/temporal/describe-error';
import { standing } from './activities';
import type { Job } from './job';

/**
 * Standing approvals in the job's life: a gated call that one covers runs
 * as approved by its reviewer, with no person asked now (one use taken,
 * audited with the approval's id); an approval that asks for one keeps it
 * for later calls of the same operation.
 */

/** The requests with those a standing approval covers approved; each use audited. Only requests whose rules allow one are looked up. */
export async function coveredByStanding(job: Job, requests: readonly PendingRequest[], now: number): Promise<ApprovalRequest[]> {
  return Promise.all(
    requests.map(async (request): Promise<ApprovalRequest> => {
      if (request.standing === undefined) return request;
      let found;
      try {
        found = await standing.useStanding.executeWithOptions({ summary: `standing approval for ${request.toolName}` }, [{ jobId: job.jobId, scope: job.input.scope, request }]);
      } catch (err) {
        if (isCancellation(err)) throw err;
        // The store cannot be asked: a person decides, as without standing approvals.
        job.audit.record({ type: 'runtime_error', data: { code: 'standing_unavailable', error: describeError(err), callId: request.callId, toolName: request.toolName } });
        return request;
      }
      for (const d of found.declined) {
        job.audit.record({ type: 'standing_declined', data: { standingId: d.id, requestId: request.requestId, toolName: request.toolName, why: d.why, target: requestTarget(request) } });
      }
      const used = found.used;
      if (used === null) return request;
      job.audit.record({
        type: 'standing_used',
        data: {
          standingId: used.id,
          requestId: request.requestId,
          callId: request.callId,
          toolName: request.toolName,
          ruleId: request.ruleId,
          fingerprint: request.fingerprint,
          reviewer: used.reviewer,
          use: used.use,
          uses: used.uses,
          until: new Date(used.until).toISOString(),
          target: requestTarget(request),
        },
      });
      return {
        ...request,
        status: 'approved',
        decision: {
          decision: 'approve',
          reviewer: used.reviewer,
          reason: null,
          decidedAt: now,
          editedArgs: null,
          editedFingerprint: null,
          standing: { kind: 'used', id: used.id, use: used.use, uses: used.uses, until: used.until },
        },
      };
    }),
  );
}

/** Keeps the standing approval a verified decision asks for; undefined when it could not be kept (said in the audit). */
export async function keepStanding(job: Job, request: PendingRequest, payload: DecisionPayload): Promise<{ id: string; until: number; uses: number } | undefined> {
  let kept;
  try {
    kept = await standing.recordStanding.executeWithOptions({ summary: 'keep a standing approval' }, [{ jobId: job.jobId, scope: job.input.scope, request, payload }]);
  } catch (err) {
    if (isCancellation(err)) throw err;
    kept = { ok: false as const, reason: describeError(err) };
  }
  if (!kept.ok) {
    job.audit.record({ type: 'standing_not_kept', data: { requestId: request.requestId, toolName: request.toolName, reviewer: payload.reviewer, reason: kept.reason } });
    return undefined;
  }
  job.audit.record({
    type: 'standing_granted',
    data: {
      standingId: kept.id,
      requestId: request.requestId,
      toolName: request.toolName,
      ruleId: request.ruleId,
      reviewer: payload.reviewer,
      uses: kept.uses,
      until: new Date(kept.until).toISOString(),
      target: requestTarget(request),
    },
  });
  return kept;
}

/** A kept standing approval whose decision was not applied after all (another came first): ended at once. */
export async function dropStanding(job: Job, id: string, why: string): Promise<void> {
  try {
    await standing.dropStanding.executeWithOptions({ summary: 'end a standing approval' }, [{ id, reason: why }]);
    job.audit.record({ type: 'standing_revoked', data: { standingId: id, by: 'airlock', reason: why } });
  } catch (err) {
    if (isCancellation(err)) throw err;
    job.audit.record({ type: 'runtime_error', data: { code: 'standing_unavailable', error: `standing approval ${id} could not be ended (${why}): ${describeError(err)}; revoke it with airlock standing revoke ${id}` } });
  }
}
