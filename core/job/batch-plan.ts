import { type z } from 'zod';
import { callFingerprint, stateFingerprint } from '../approval/fingerprint';
import { type CallEvaluation, type GateDecision } from '../policy/call-evaluation';
import { evaluateCall } from '../policy/evaluate';
import { type RuleFire, batchOutcome, recordFires, ruleById } from '../policy/rule-fires';
import type { Rule } from '../policy/rules';
import type { PolicySnapshot } from '../policy/snapshot';
import { ownerOf } from '../tools/machines';
import { COMPLETE_TOOL } from '../tools/registry';
import { type BatchPlan, PLAN_SCHEMA_VERSION, type PlanInput, type Planned, type PlannedCall, type RuleRef, type batchPlanSchema } from './plan-schema';
import { type CompleteCall, type ToolCall } from './preflight';
import { Texts } from './texts';

/** Every rule that asks for approval of an evaluated call (not only the deciding one). */
export function approvalRules(snapshot: PolicySnapshot, evaluation: CallEvaluation): Rule[] {
  return evaluation.matches
    .filter((m) => m.decision === 'require_approval' && !m.shadow)
    .flatMap((m) => {
      const rule = ruleById(snapshot, m.ruleId);
      return rule === undefined ? [] : [rule];
    });
}

type ToolFate = Planned<'run' | 'deny' | 'redirect' | 'approval' | 'stop'>;

export type PlanParts = Omit<z.infer<typeof batchPlanSchema>, 'schemaVersion' | 'outcome' | 'stoppedBy'>;

/** The plan with its outcome, which follows from its calls. */
export function withOutcome(parts: PlanParts): BatchPlan {
  const plan = { schemaVersion: PLAN_SCHEMA_VERSION, ...parts };
  const stop = parts.calls.find((p) => p.kind === 'stop');
  if (stop?.kind === 'stop') return { ...plan, outcome: 'stop', stoppedBy: stop.ruleId };
  const outcome = batchOutcome(parts.calls.map(decisionOf));
  if (outcome === 'park') return { ...plan, outcome };
  if (outcome === 'redirect') return { ...plan, outcome };
  // Only a stop call decides `stop`, and there is none here.
  return { ...plan, outcome: 'run' };
}

/** The gate's decision for one tool call, before per-job memory. */
function toolFate(input: PlanInput, call: ToolCall, evaluation: CallEvaluation): ToolFate {
  const deciding = evaluation.deciding;
  if (evaluation.decision === 'allow' || evaluation.decision === 'audit_only' || deciding === undefined) {
    return { kind: 'run', call, fingerprint: stateOf(input, call), evaluation };
  }
  const fingerprint = callFingerprint({
    jobId: input.jobId,
    scope: input.scope,
    toolName: call.toolName,
    normalizedArgs: call.args,
    ruleId: deciding.ruleId,
    ruleVersion: deciding.ruleVersion,
  });
  const deny = (why: string): ToolFate => ({ kind: 'deny', call, ruleId: deciding.ruleId, fingerprint, message: `Not executed: ${why}`, evaluation });
  switch (evaluation.decision) {
    case 'stop':
      return { kind: 'stop', call, ruleId: deciding.ruleId, evaluation };
    case 'deny': {
      const instruction = evaluation.instructions[0];
      return deny(`policy rule ${deciding.ruleId} denies this call.${instruction !== undefined ? ` ${instruction}` : ''}`);
    }
    case 'redirect':
      if (input.memory.redirectedFingerprints.includes(fingerprint)) {
        return deny(`policy rule ${deciding.ruleId} already asked you to re-plan this exact call; repeating it unchanged is denied.`);
      }
      return { kind: 'redirect', call, ruleId: deciding.ruleId, fingerprint, evaluation };
    case 'require_approval':
      if (input.memory.deniedFingerprints.includes(fingerprint)) {
        return deny('this exact call was denied earlier in this job and will not be requested again. Choose a different approach.');
      }
      return { kind: 'approval', call, ruleId: deciding.ruleId, ruleVersion: deciding.ruleVersion, fingerprint, evaluation };
  }
}

/**
 * A call whose target no machine of the tools config owns, or that spans
 * two machines, is refused before anything runs, whatever the rules say:
 * there is no tools worker it could run on.
 */
function unowned(input: PlanInput, call: ToolCall, evaluation: CallEvaluation): Planned<'deny'> | undefined {
  const owner = ownerOf(input.snapshot.machines, call.toolName, call.args);
  if (owner.kind !== 'none') return undefined;
  return { kind: 'deny', call, ruleId: null, fingerprint: stateOf(input, call), message: Texts.noMachine(owner.reason), evaluation };
}

/** The call's state fingerprint: the caller's, or computed here. */
function stateOf(input: PlanInput, call: ToolCall): string {
  return input.fingerprints?.get(call.callId) ?? stateFingerprint(input.jobId, input.scope, call);
}

function evaluationOf(input: PlanInput, call: ToolCall): CallEvaluation {
  const evaluation = input.evaluations.get(call.callId);
  if (evaluation === undefined) throw new Error(`no policy evaluation for call ${call.callId}`);
  return evaluation;
}

function decisionOf(p: PlannedCall): GateDecision {
  switch (p.kind) {
    case 'stop':
      return 'stop';
    case 'approval':
      return 'require_approval';
    case 'redirect':
      return 'redirect';
    case 'deny':
      return 'deny';
    default:
      return 'allow';
  }
}

/**
 * The completion gate (`completion.before_accept`, deterministic rules
 * only): a rule that denies or redirects turns `complete` down once per job.
 */
function completionFate(input: PlanInput, call: CompleteCall): { planned: Planned<'complete' | 'complete_rejected'>; fires: RuleFire[] } {
  const evaluation = evaluateCall(
    input.snapshot,
    'completion.before_accept',
    { toolName: COMPLETE_TOOL, category: 'control', args: { summary: call.summary }, scope: input.scope },
    input.ruleCounters,
    input.now,
  );
  const fires = evaluation.matches.filter((m) => !m.shadow && m.duplicate !== true);
  const blocking = evaluation.matches.filter(
    (m) => !m.shadow && (m.decision === 'deny' || m.decision === 'redirect') && !input.memory.completionRuleFires.includes(m.ruleId),
  );
  const [first] = blocking;
  if (first === undefined) return { planned: { kind: 'complete', call, evaluation }, fires };
  const instructions: string[] = [];
  for (const m of blocking) {
    const text = ruleById(input.snapshot, m.ruleId)?.instruction;
    if (text !== undefined && !instructions.includes(text)) instructions.push(text);
  }
  return {
    planned: {
      kind: 'complete_rejected',
      call,
      ruleIds: blocking.map((m) => m.ruleId),
      message: Texts.completeRejected(first.ruleId, ruleById(input.snapshot, first.ruleId)?.instruction),
      instructions,
      evaluation,
    },
    fires,
  };
}

/**
 * A batch's plan from its calls' evaluations: per-job memory first (a
 * denied fingerprint is never requested again; the same redirect twice
 * becomes a deny; the approval budget), then the batch outcome, then — only
 * when the batch runs — the completion gate for its first `complete`.
 */
export function planBatch(input: PlanInput): BatchPlan {
  let approvalsLeft = input.memory.maxApprovalRequests - input.memory.approvalRequests;
  const fires: RuleFire[] = [];
  const toolPlans: PlannedCall[] = input.calls.map((call): PlannedCall => {
    if (call.kind === 'error') return { kind: 'error', call };
    if (call.kind === 'complete') return { kind: 'complete_held', call, reason: 'held' };
    const evaluation = evaluationOf(input, call);
    const refused = unowned(input, call, evaluation);
    if (refused !== undefined) return refused;
    const fired = evaluation.matches.filter((m) => !m.shadow && m.duplicate !== true);
    // Hashing a call costs in proportion to its arguments (a megabyte write): only when a rule fired.
    if (fired.length > 0) {
      const state = stateOf(input, call);
      fires.push(...fired.map((m) => ({ ...m, stateFingerprint: state })));
    }
    const fate = toolFate(input, call, evaluation);
    if (fate.kind !== 'approval') return fate;
    if (approvalsLeft <= 0) {
      return {
        kind: 'deny',
        call,
        ruleId: fate.ruleId,
        fingerprint: fate.fingerprint,
        message: `Not executed: this job reached its limit of ${input.memory.maxApprovalRequests} approval requests.`,
        evaluation,
      };
    }
    approvalsLeft--;
    return fate;
  });
  const outcome = batchOutcome(toolPlans.map(decisionOf));
  const instructions: string[] = [];
  for (const p of toolPlans) {
    if (p.kind !== 'redirect') continue;
    for (const text of p.evaluation.instructions) if (!instructions.includes(text)) instructions.push(text);
  }
  const completionRejections: string[] = [];
  let completeSeen = false;
  const calls = toolPlans.map((p): PlannedCall => {
    if (p.kind !== 'complete_held' || outcome !== 'run') return p;
    if (completeSeen) return { ...p, reason: 'duplicate' };
    completeSeen = true;
    const gate = completionFate({ ...input, ruleCounters: recordFires(input.ruleCounters, fires, input.now) }, p.call);
    fires.push(...gate.fires);
    if (gate.planned.kind === 'complete_rejected') completionRejections.push(...gate.planned.ruleIds);
    return gate.planned;
  });
  return withOutcome({ calls, instructions, fires, completionRejections });
}

/**
 * Edited calls evaluated again before they run. A stop ends the job; a deny
 * or redirect keeps the call from running; an approval rule the reviewer's
 * approval did not cover keeps it from running too (it needs its own
 * request). Nothing here counts toward fires or the approval budget.
 */
export function planEdits(input: PlanInput & { readonly covered: Readonly<Record<string, readonly RuleRef[]>> }): BatchPlan {
  const key = (r: RuleRef) => `${r.ruleId}@${r.ruleVersion}`;
  const calls = input.calls.map((call): PlannedCall => {
    if (call.kind !== 'tool') return call.kind === 'error' ? { kind: 'error', call } : { kind: 'complete_held', call, reason: 'held' };
    const evaluation = evaluationOf(input, call);
    const refused = unowned(input, call, evaluation);
    if (refused !== undefined) return refused;
    const fate = toolFate(input, call, evaluation);
    const denied = (from: Planned<'deny' | 'redirect' | 'approval'>, message: string): PlannedCall => ({
      kind: 'deny',
      call,
      ruleId: from.ruleId,
      fingerprint: from.fingerprint,
      message,
      evaluation,
    });
    switch (fate.kind) {
      case 'run':
      case 'stop':
        return fate;
      case 'deny':
        return denied(fate, Texts.editDenied(fate.message));
      case 'redirect':
        return denied(fate, Texts.editDenied(Texts.redirected(fate.ruleId)));
      case 'approval': {
        const covered = new Set((input.covered[call.callId] ?? []).map(key));
        const extra = approvalRules(input.snapshot, evaluation).find((r) => !covered.has(key({ ruleId: r.id, ruleVersion: r.version })));
        if (extra !== undefined || !covered.has(key(fate))) return denied(fate, Texts.editNeedsOwnApproval(extra?.id ?? fate.ruleId));
        return { kind: 'run', call, fingerprint: fate.fingerprint, evaluation };
      }
    }
  });
  return withOutcome({ calls, instructions: [], fires: [], completionRejections: [] });
}

/** What the gate plans from: a fresh batch, or (with `covered`) a reviewer's edited calls. */
export interface PlanRequest extends PlanInput {
  /** Re-evaluating edits: the approval rules the reviewer's approval covers, by call id. */
  readonly covered?: Readonly<Record<string, readonly RuleRef[]>> | undefined;
}

/** The one planner behind every policy decision of a job. */
export function plan(input: PlanRequest): BatchPlan {
  const { covered } = input;
  return covered === undefined ? planBatch(input) : planEdits({ ...input, covered });
}
