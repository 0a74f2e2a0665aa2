import { condition, isCancellation } from '@temporalio/workflow';
import { buildApprovalRequest, requestTarget } from '../core/job/approval-request';
import { approvalCard } from '../core/reviewer/approval-card';
import { parkedBatchView } from '../core/job/batch-view';
import { approvalRules } from '../core/job/batch-plan';
import { type BatchPlan, type Planned, type RuleRef } from '../core/job/plan-schema';
import { resumedSteps } from '../core/job/call-steps';
import { describeError } from '../core/temporal/describe-error';
import { summarizeArgs } from '../core/redaction/masking';
import type { AgentJobResult } from '../core/job/job-input';
import type { PrepareApprovalResult } from '../activities/tool-gate/messages';
import { observeOptions, routeOf, tools } from './activities';
import { evaluateBatch } from './policy-check';
import type { Job } from './job';
import type { JobState } from './job-state';
import { runSteps } from './run-calls';
import { stopJob } from './stop';
import { coveredByStanding } from './standing';
import { isPending } from '../core/job/job-view';

/**
 * Parks a batch: each gated call's target is observed on the tools side
 * (side by side) and becomes an approval request; a call whose target
 * cannot be observed is answered "not executed" when the batch resumes.
 * A call observed with its facts (`ready`, by call id) is not asked again.
 */
export async function park(job: Job, state: JobState, plan: BatchPlan, ready: Readonly<Record<string, PrepareApprovalResult>> = {}): Promise<void> {
  const now = Date.now();
  const gated = plan.calls.filter((p): p is Planned<'approval'> => p.kind === 'approval');
  const prepared = await Promise.all(
    gated.map(async (p) => {
      const done = ready[p.call.callId];
      if (done !== undefined) return done;
      const route = routeOf(state.snapshot, p.call);
      try {
        return await tools.prepareApproval.executeWithOptions({ ...observeOptions, taskQueue: route.taskQueue, summary: `prepare ${p.call.toolName}` }, [
          { toolName: p.call.toolName, args: p.call.args, ...route.on },
        ]);
      } catch (err) {
        if (isCancellation(err)) throw err;
        return { failed: describeError(err) };
      }
    }),
  );
  const requests = [];
  const prepareFailures = [];
  for (const [i, p] of gated.entries()) {
    const prep = prepared[i] ?? { failed: 'no answer' };
    if ('failed' in prep) {
      job.audit.record({ type: 'runtime_error', data: { code: 'prepare_failed', error: prep.failed, callId: p.call.callId, toolName: p.call.toolName } });
      prepareFailures.push({ callId: p.call.callId, reason: prep.failed });
      continue;
    }
    requests.push(buildApprovalRequest({ snapshot: state.snapshot, planned: p, prepared: prep, requester: job.input.requester, now }));
  }
  // A call a standing approval covers is approved by it now; only the others ask a person.
  const settled = await coveredByStanding(job, requests, now);
  state.park({ plan, requests: settled, prepareFailures, parkedAt: now, ...(job.statedReason !== undefined ? { statedReason: job.statedReason } : {}) });
  const parked = state.parked;
  const batch = parked === null ? null : parkedBatchView(parked);
  for (const r of settled.filter(isPending)) {
    job.audit.record({
      type: 'approval_requested',
      data: {
        requestId: r.requestId,
        callId: r.callId,
        toolName: r.toolName,
        ruleId: r.ruleId,
        ruleVersion: r.ruleVersion,
        fingerprint: r.fingerprint,
        requester: r.requester,
        argsSummary: summarizeArgs(r.args),
        expiresAt: new Date(r.expiresAt).toISOString(),
        target: requestTarget(r),
        reason: r.reason,
        card: approvalCard({ jobId: job.jobId, goal: job.input.goal, request: job.pendingView(r), batch }, { now, cli: 'npx airlock' }),
        ...(r.machine !== undefined ? { machine: r.machine } : {}),
      },
    });
  }
  if (settled.some(isPending)) job.status = 'awaiting_approval';
}

/**
 * Parks until every request of the batch is decided or expired (expired =
 * denied). `wake` (a client-driven job's new calls) ends the wait early with
 * 'woken', the batch still parked.
 */
export async function waitForDecisions(job: Job, state: JobState, wake?: () => boolean): Promise<'decided' | 'continue_as_new' | 'upgrade' | 'woken'> {
  for (;;) {
    const now = Date.now();
    for (const r of state.pendingRequests()) {
      if (r.expiresAt > now) continue;
      state.settle({ ...r, status: 'expired' });
      state.rememberDenied(r.fingerprint);
      job.audit.record({
        type: 'approval_expired',
        data: { requestId: r.requestId, toolName: r.toolName, ruleId: r.ruleId, fingerprint: r.fingerprint, reason: 'expired', target: requestTarget(r) },
      });
    }
    const open = state.pendingRequests();
    // All decided: the batch resumes, shows the job running and carries these events with its next activity.
    if (open.length === 0) return 'decided';
    job.show();
    const newBuilds = job.newBuildSignals;
    // Read before the audit write (a local activity): what follows it may fall in another workflow task live than on replay.
    const continueAsNew = job.shouldContinueAsNew();
    const upgrade = job.targetBuildChanged();
    await job.audit.flush();
    if (upgrade) return 'upgrade';
    if (continueAsNew) return 'continue_as_new';
    if (wake?.() === true) return 'woken';
    const nextExpiry = Math.max(1, Math.min(...open.map((r) => r.expiresAt)) - now);
    // Audit events whose write failed are retried by this timer, with backoff.
    const retry = job.audit.retryIn(now);
    // Woken by a decision or an audited rejection (both are history events), by the next expiry, to retry audit, or by a newer build.
    await condition(
      () => state.pendingRequests().length < open.length || job.audit.fresh > 0 || job.newBuildSignals > newBuilds || wake?.() === true,
      retry === undefined ? nextExpiry : Math.min(nextExpiry, retry),
    );
  }
}

/**
 * After every decision: edited calls are evaluated again (a stop ends the
 * job, a deny keeps the call from running), approved ones are checked
 * against the world as it is now and run once, and every other call is
 * told why it did not run.
 */
export async function resumeParkedBatch(job: Job, state: JobState): Promise<AgentJobResult | undefined> {
  const parked = state.parked;
  if (parked === null) return undefined;
  const edits = await reevaluateEdits(job, state);
  if (edits.stop !== undefined) {
    state.closeParked();
    return stopJob(job, state, parked.plan.calls, edits.stop, `stopped by rule ${edits.stop} (edited call)`);
  }
  job.status = 'running';
  job.show();
  await runSteps(job, state, resumedSteps(parked, edits.denied));
  state.rememberRedirects(parked.plan);
  job.inject(state, parked.plan.instructions);
  state.closeParked();
  return undefined;
}

/** Approved edits under policy again; the reviewer's approval covers the rules the original call was under, no other. */
async function reevaluateEdits(job: Job, state: JobState): Promise<{ stop: string | undefined; denied: Map<string, string> }> {
  const denied = new Map<string, string>();
  const parked = state.parked;
  const originals = new Map((parked?.plan.calls ?? []).flatMap((p) => (p.kind === 'approval' ? [[p.call.callId, p] as const] : [])));
  const edited = state.requests().flatMap((r) => {
    const original = originals.get(r.callId);
    return r.status === 'approved' && r.decision.editedArgs !== null && original !== undefined ? [{ original, args: r.decision.editedArgs }] : [];
  });
  if (edited.length === 0) return { stop: undefined, denied };
  const covered: Record<string, RuleRef[]> = {};
  for (const { original } of edited) {
    covered[original.call.callId] = approvalRules(state.snapshot, original.evaluation).map((r) => ({ ruleId: r.id, ruleVersion: r.version }));
  }
  const { plan } = await evaluateBatch(
    job,
    state,
    edited.map(({ original, args }) => ({ ...original.call, args })),
    covered,
  );
  if (plan.outcome === 'stop') return { stop: plan.stoppedBy, denied };
  for (const p of plan.calls) if (p.kind === 'deny') denied.set(p.call.callId, p.message);
  return { stop: undefined, denied };
}
