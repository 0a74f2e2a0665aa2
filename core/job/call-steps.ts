import type { ApprovalRequest } from '../approval/approvals';
import type { Planned, PlannedCall } from './plan-schema';
import type { ParkedBatch } from './carried-state';
import type { ToolCall } from './preflight';
import { Texts } from './texts';

/**
 * From a plan to what happens to each call, in call order: a fixed answer
 * for the model, a run (checked again first when a reviewer approved it),
 * or the batch's `complete`. Pure: the workflow carries the steps out.
 */

/** What a grant binds besides the arguments: the gating rule (null when ungated), the fingerprint and, for an approval, its nonce. */
export interface Binding {
  readonly ruleId: string | null;
  readonly ruleVersion: number | null;
  readonly fingerprint: string;
  readonly nonce?: string;
}

/** A reviewer's approval, checked again against the world before the call runs. */
export interface ApprovedRun {
  readonly request: Extract<ApprovalRequest, { status: 'approved' }>;
  /** Fields the reviewer changed, for the model's result. */
  readonly editedFields: readonly string[];
}

/** How one call of a batch is answered. */
export type CallStep =
  | { readonly kind: 'answer'; readonly callId: string; readonly text: string }
  | { readonly kind: 'run'; readonly call: ToolCall; readonly binding: Binding; readonly approved?: ApprovedRun }
  | { readonly kind: 'complete'; readonly planned: Planned<'complete' | 'complete_rejected'> };

const answer = (p: PlannedCall, text: string): CallStep => ({ kind: 'answer', callId: p.call.callId, text });

/** Results of calls that do not run because their batch was re-planned or parked. */
export function heldAnswer(p: PlannedCall): string {
  switch (p.kind) {
    case 'error':
      return p.call.message;
    case 'deny':
      return p.message;
    case 'redirect':
      return Texts.redirected(p.ruleId);
    case 'complete':
    case 'complete_rejected':
    case 'complete_held':
      return Texts.completeNotAccepted;
    default:
      return Texts.heldForRedirect;
  }
}

/** A fresh batch that runs: allowed calls run, denied and invalid ones are answered, `complete` is decided last. */
export function freshStep(p: PlannedCall): CallStep {
  switch (p.kind) {
    case 'run':
      return { kind: 'run', call: p.call, binding: { ruleId: null, ruleVersion: null, fingerprint: p.fingerprint } };
    case 'complete':
    case 'complete_rejected':
      return { kind: 'complete', planned: p };
    case 'complete_held':
      return answer(p, p.reason === 'duplicate' ? Texts.duplicateComplete : Texts.completeNotAccepted);
    default:
      return answer(p, heldAnswer(p));
  }
}

/** Why a gated call of a parked batch does not run, or how it runs now that it is decided. */
function decidedStep(p: Planned<'approval'>, request: ApprovalRequest | undefined, prepareFailure: string | undefined, editDenied: string | undefined): CallStep {
  if (request === undefined) return answer(p, Texts.prepareFailed(prepareFailure ?? 'the request was not created'));
  switch (request.status) {
    case 'pending':
    case 'expired':
      return answer(p, Texts.expired);
    case 'denied':
      return answer(p, request.decision.withdrawn === true ? Texts.withdrawn(request.decision.reviewer, request.decision.reason) : Texts.deniedByReviewer(request.decision.reviewer, request.decision.reason));
    case 'approved': {
      if (editDenied !== undefined) return answer(p, editDenied);
      const { editedArgs, editedFingerprint } = request.decision;
      const args = editedArgs ?? request.args;
      const editedFields = editedArgs === null ? [] : Object.keys(editedArgs).filter((k) => JSON.stringify(editedArgs[k]) !== JSON.stringify(request.args[k]));
      return {
        kind: 'run',
        call: { ...p.call, args },
        binding: { ruleId: request.ruleId, ruleVersion: request.ruleVersion, fingerprint: editedFingerprint ?? request.fingerprint, nonce: request.nonce },
        approved: { request, editedFields },
      };
    }
  }
}

/** The steps of a parked batch once every request is decided; `editDenied` holds edits that policy turned down. */
export function resumedSteps(parked: ParkedBatch, editDenied: ReadonlyMap<string, string>): CallStep[] {
  const requests = new Map(parked.requests.map((r) => [r.callId, r]));
  const failures = new Map(parked.prepareFailures.map((f) => [f.callId, f.reason]));
  return parked.plan.calls.map((p): CallStep => {
    if (p.kind === 'run') return freshStep(p);
    if (p.kind !== 'approval') return answer(p, heldAnswer(p));
    return decidedStep(p, requests.get(p.call.callId), failures.get(p.call.callId), editDenied.get(p.call.callId));
  });
}

export type RunStep = Extract<CallStep, { kind: 'run' }>;

/**
 * The read-only calls that start at `index` and follow one another: they
 * change nothing, so they may run together; a call that changes something,
 * an approved call (checked again first) or an answer ends the run, which
 * keeps every side effect in the order the model asked for.
 */
export function readOnlyRun(steps: readonly CallStep[], index: number): RunStep[] {
  const out: RunStep[] = [];
  for (const step of steps.slice(index)) {
    if (step.kind !== 'run' || step.approved !== undefined || step.call.category !== 'read') break;
    out.push(step);
  }
  return out;
}
