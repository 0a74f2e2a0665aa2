import { ActivityFailure, ApplicationFailure, isCancellation } from '@temporalio/workflow';
import type { BatchPlan, Planned } from '../core/job/plan-schema';
import { freshStep, heldAnswer, readOnlyRun, type ApprovedRun, type CallStep, type RunStep } from '../core/job/call-steps';
import { describeError } from '../core/temporal/describe-error';
import { FailureTypes } from '../core/temporal/failure-types';
import type { Grant } from '../core/approval/grants';
import { summarizeArgs } from '../core/redaction/masking';
import type { AgentJobResult } from '../core/job/job-input';
import type { ToolCall } from '../core/job/preflight';
import { requestTarget } from '../core/job/approval-request';
import { Texts } from '../core/job/texts';
import { executeOptions, routeOf, tools } from './activities';
import { approvedCheck, grantWindow, issueGrants } from './grants';
import type { Job } from './job';
import type { JobState } from './job-state';

/**
 * Running a batch: calls are answered in call order, allowed and approved
 * ones run on the tools queue with a grant issued right before they need
 * it, and the batch's `complete` is settled once everything else ran.
 */

const GRANT_ATTEMPTS = 3;

/** A batch to re-plan: nothing runs, every call is answered, the instructions follow as one message. */
export function redirectBatch(job: Job, state: JobState, plan: BatchPlan): void {
  for (const p of plan.calls) state.addToolResult(p.call.callId, heldAnswer(p), true);
  state.rememberRedirects(plan);
  job.inject(state, plan.instructions);
}

/**
 * A fresh batch that runs; its `complete`, decided by the gate with the
 * batch, ends the job once the other calls have run, or is turned down.
 */
export async function runBatch(job: Job, state: JobState, plan: BatchPlan, issued?: Readonly<Record<string, Grant>>): Promise<AgentJobResult | undefined> {
  const complete = await runSteps(job, state, plan.calls.map(freshStep), issued);
  if (complete?.planned.kind === 'complete') {
    state.fillToolResult(complete.slot, complete.planned.call.callId, Texts.completeAccepted);
    return job.finish(state, 'completed', { summary: complete.planned.call.summary });
  }
  if (complete?.planned.kind === 'complete_rejected') {
    state.fillToolResult(complete.slot, complete.planned.call.callId, complete.planned.message);
    job.inject(state, complete.planned.instructions);
  }
  return undefined;
}

/**
 * Answers a batch's calls in call order, running those that may run: an
 * approved call is revalidated first; a grant is issued right before it is
 * needed, for this call and the following ones that need no further check;
 * read-only calls that follow one another run together.
 * Returns the batch's `complete`, whose result slot waits for the caller.
 */
export async function runSteps(
  job: Job,
  state: JobState,
  steps: readonly CallStep[],
  issued: Readonly<Record<string, Grant>> = {},
): Promise<{ readonly planned: Planned<'complete' | 'complete_rejected'>; readonly slot: number } | undefined> {
  // Grants the model turn issued with its decision; the others are issued on the way.
  const grants = new Map<string, Grant>(Object.entries(issued));
  let complete: { planned: Planned<'complete' | 'complete_rejected'>; slot: number } | undefined;
  for (let index = 0; index < steps.length; index++) {
    const reads = readOnlyRun(steps, index);
    if (reads.length > 1) {
      await runTogether(job, state, steps, index, reads, grants);
      index += reads.length - 1;
      continue;
    }
    const step = steps[index];
    switch (step?.kind) {
      case undefined:
        break;
      case 'answer':
        // An answer instead of a run: denied, held, expired, refused.
        state.addToolResult(step.callId, step.text, true);
        break;
      case 'complete':
        // Its result is decided after the other calls ran; its place keeps the call order.
        complete = { planned: step.planned, slot: state.addToolResult(step.planned.call.callId, '') };
        break;
      case 'run': {
        if (!grants.has(step.call.callId)) {
          for (const [callId, grant] of Object.entries(await issueGrants(job, grantWindow(steps, index, grants)))) grants.set(callId, grant);
        }
        const output = await execute(job, state, step, grants.get(step.call.callId));
        const edited = step.approved?.editedFields ?? [];
        state.addToolResult(step.call.callId, edited.length > 0 ? `${output.text}\n${Texts.edited(edited)}` : output.text, output.failed);
        break;
      }
    }
  }
  return complete;
}

/** Read-only calls run at once; each result takes its place in call order whenever it arrives. */
async function runTogether(job: Job, state: JobState, steps: readonly CallStep[], index: number, reads: readonly RunStep[], grants: Map<string, Grant>): Promise<void> {
  if (reads.some((s) => !grants.has(s.call.callId))) {
    const window = grantWindow(steps, index, grants).filter((s) => !grants.has(s.call.callId));
    for (const [callId, grant] of Object.entries(await issueGrants(job, window))) grants.set(callId, grant);
  }
  const slotted = reads.map((step) => ({ step, slot: state.addToolResult(step.call.callId, '') }));
  await Promise.all(
    slotted.map(async ({ step, slot }) => {
      const output = await execute(job, state, step, grants.get(step.call.callId));
      state.fillToolResult(slot, step.call.callId, output.text, output.failed);
    }),
  );
}

/** An approved call that no longer holds is answered, and audited, instead of run. */
function refuseApproved(job: Job, state: JobState, call: ToolCall, approved: ApprovedRun, error: string, text: string): string {
  state.noteOutcome({ requestId: approved.request.requestId, callId: call.callId, toolName: call.toolName, outcome: 'refused', detail: error });
  job.audit.record({ type: 'runtime_error', data: { code: 'revalidation_failed', error, callId: call.callId, toolName: call.toolName, requestId: approved.request.requestId } });
  return text;
}

/**
 * An approved call the tool found nothing left to do for (a service healthy
 * again): not run, not a failure; audited as skipped and the model told why.
 */
function skipApproved(job: Job, state: JobState, call: ToolCall, approved: ApprovedRun, fingerprint: string, reason: string): string {
  state.noteOutcome({ requestId: approved.request.requestId, callId: call.callId, toolName: call.toolName, outcome: 'not_needed', detail: reason });
  job.audit.record({
    type: 'tool_executed',
    data: {
      callId: call.callId,
      toolName: call.toolName,
      fingerprint,
      ruleId: approved.request.ruleId,
      requestId: approved.request.requestId,
      target: requestTarget(approved.request),
      ok: true,
      replayed: false,
      skipped: 'not_needed',
      reason,
    },
  });
  return Texts.notNeeded(reason);
}

function failureType(err: unknown): string | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof ApplicationFailure ? (cause.type ?? undefined) : undefined;
}

/**
 * Runs one call on the tools queue with its grant. A grant that expired
 * while the tools worker was away is replaced; anything else is reported
 * to the model, never retried as a new side effect.
 */
/** A call's answer, and whether it reports a failure (did not run, the tool failed, or the outcome is unknown). */
interface Executed {
  readonly text: string;
  readonly failed: boolean;
}

async function execute(job: Job, state: JobState, step: RunStep, granted: Grant | undefined): Promise<Executed> {
  const { call, binding, approved } = step;
  // An approved call is checked against the world as it is now inside the same attempt that runs it.
  const check = approved !== undefined ? approvedCheck(job, approved) : undefined;
  let grant = granted;
  const route = routeOf(state.snapshot, call);
  for (let attempt = 1; ; attempt++) {
    grant ??= (await issueGrants(job, [step]))[call.callId];
    if (grant === undefined) return { text: Texts.executeFailed('no grant was issued for this call'), failed: true };
    try {
      const result = await tools.execute.executeWithOptions({ ...executeOptions, taskQueue: route.taskQueue, summary: `${call.toolName} ${summarizeArgs(call.args, 80)}` }, [
        {
          jobId: job.jobId,
          callId: call.callId,
          scope: job.input.scope,
          toolName: call.toolName,
          args: call.args,
          ruleId: binding.ruleId,
          ruleVersion: binding.ruleVersion,
          grant,
          ...(check !== undefined ? { approved: check } : {}),
          ...route.on,
        },
      ]);
      if (result.notNeeded !== undefined && approved !== undefined) return { text: skipApproved(job, state, call, approved, binding.fingerprint, result.notNeeded), failed: false };
      if (result.refused !== undefined && approved !== undefined) return { text: refuseApproved(job, state, call, approved, result.refused, Texts.revalidationFailed(result.refused)), failed: true };
      if (approved !== undefined) {
        const outcome = result.reconciled === 'unknown' ? 'unknown' : result.ok ? 'executed' : 'failed';
        state.noteOutcome({ requestId: approved.request.requestId, callId: call.callId, toolName: call.toolName, outcome, detail: result.ok ? '' : result.output });
      }
      // An unknown outcome is not counted as executed; the model, `show` and the audit say it is unknown.
      if (result.reconciled !== 'unknown') state.countExecuted();
      if (result.reconciled !== undefined) state.noteReconciled({ callId: call.callId, toolName: call.toolName, reconciled: result.reconciled, ok: result.ok });
      job.audit.record({
        type: 'tool_executed',
        data: {
          callId: call.callId,
          toolName: call.toolName,
          fingerprint: binding.fingerprint,
          ruleId: binding.ruleId ?? undefined,
          ...(approved !== undefined ? { requestId: approved.request.requestId, target: requestTarget(approved.request) } : {}),
          ok: result.ok,
          replayed: result.replayed,
          reconciled: result.reconciled,
          ...(!result.ok ? { reason: result.output.slice(0, 300) } : {}),
          ...route.on,
        },
      });
      return { text: result.output, failed: !result.ok || result.reconciled === 'unknown' };
    } catch (err) {
      // A cancelled job ends as cancelled; its call is not reported as a failure of the tool.
      if (isCancellation(err)) throw err;
      const type = failureType(err);
      if (type === FailureTypes.GrantExpired && attempt < GRANT_ATTEMPTS) {
        grant = undefined;
        continue;
      }
      job.audit.record({
        type: 'runtime_error',
        data: {
          code: isFailureType(type) ? type : 'execute_failed',
          error: describeError(err),
          callId: call.callId,
          toolName: call.toolName,
          ...(approved !== undefined ? { requestId: approved.request.requestId } : {}),
        },
      });
      if (approved !== undefined) {
        const outcome = type === FailureTypes.NonceConsumed ? 'unknown' : 'failed';
        state.noteOutcome({ requestId: approved.request.requestId, callId: call.callId, toolName: call.toolName, outcome, detail: describeError(err) });
      }
      // A consumed nonce whose attempt never reported: it may have run, so never "could not be run".
      return { text: type === FailureTypes.NonceConsumed ? Texts.outcomeUnknown(describeError(err)) : Texts.executeFailed(describeError(err)), failed: true };
    }
  }
}

function isFailureType(type: string | undefined): type is (typeof FailureTypes)[keyof typeof FailureTypes] {
  return Object.values<string | undefined>(FailureTypes).includes(type);
}
