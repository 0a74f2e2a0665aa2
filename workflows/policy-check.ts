import type { EvaluatePolicyInput, EvaluatePolicyResult, JudgeRequest } from '../activities/policy';
import type { PrepareApprovalResult } from '../activities/tool-gate/messages';
import type { Grant } from '../core/approval/grants';
import { batchPlanSchema, type BatchPlan, type PlannedCall, type RuleRef } from '../core/job/plan-schema';
import { describeError } from '../core/temporal/describe-error';
import { summarizeArgs } from '../core/redaction/masking';
import { ruleById } from '../core/policy/rule-fires';
import { type JudgeVerdict, type RuleMatch } from '../core/policy/call-evaluation';
import type { CallFacts } from '../core/tools/facts';
import type { PreflightedCall } from '../core/job/preflight';
import { TaskQueues } from '../core/temporal/task-queues';
import { COMPLETE_TOOL } from '../core/tools/registry';
import { judge, local, routeOf } from './activities';
import { resolveTargets } from './target-facts';
import type { Job } from './job';
import type { JobState } from './job-state';
import type { TurnDecision } from './turn-decision';

/**
 * The policy check: every decision of a job comes from one planner with one
 * input — a fresh batch (its completion gate included) or a reviewer's
 * edited calls — recorded as the `evaluatePolicy` local activity, or, for
 * a fresh batch, as part of the model turn that brought it (its first
 * pass). Judged rules are asked of the judge queue in between. Every
 * decision is audited.
 */
export async function evaluateBatch(
  job: Job,
  state: JobState,
  calls: readonly PreflightedCall[],
  covered?: Readonly<Record<string, readonly RuleRef[]>>,
  decided?: TurnDecision,
): Promise<Evaluated> {
  const seal = await policySeal(job, state);
  const input: EvaluatePolicyInput = {
    jobId: job.jobId,
    scope: job.input.scope,
    snapshot: state.snapshot,
    ...(seal !== undefined ? { policySeal: seal } : {}),
    calls,
    memory: state.memory(),
    ruleCounters: state.ruleCounters,
    now: Date.now(),
    ...(covered !== undefined ? { covered } : {}),
  };
  // A fresh batch's calls may park: the facts round prepares their approvals too. A reviewer's edit never parks again.
  const evaluated = await decide(job, state, input, decided?.result, covered === undefined);
  auditPlan(job, evaluated.plan);
  return decided?.grants === undefined ? evaluated : { ...evaluated, grants: decided.grants };
}

export interface Evaluated {
  readonly plan: BatchPlan;
  /** Grants the model turn issued with its decision, for a batch that runs. */
  readonly grants?: Readonly<Record<string, Grant>>;
  /** Approvals the tools side prepared with the calls' facts, by call id: a call that parks needs no `prepareApproval`. */
  readonly prepared?: Readonly<Record<string, PrepareApprovalResult>>;
}

/** The snapshot's seal, taken once per job. */
async function policySeal(job: Job, state: JobState): Promise<string | undefined> {
  if (state.policySeal !== undefined) return state.policySeal;
  const { seal } = await local.sealPolicy({ jobId: job.jobId, snapshot: state.snapshot });
  state.sealPolicy(seal);
  return seal;
}

async function decide(job: Job, state: JobState, input: EvaluatePolicyInput, first: EvaluatePolicyResult | undefined, mayPark: boolean): Promise<Evaluated> {
  let result: EvaluatePolicyResult = first ?? (await evaluateWithAudit(job, input));
  let facts: Record<string, CallFacts> | undefined;
  let prepared: Record<string, PrepareApprovalResult> | undefined;
  const factsFor = result.factsFor ?? [];
  if (factsFor.length > 0) {
    const prepareFor = mayPark ? (result.prepareFor ?? factsFor) : [];
    ({ facts, prepared } = await resolveTargets(job, state, input.calls, factsFor, prepareFor));
    result = await evaluateWithAudit(job, { ...input, facts, factsAsked: factsFor });
  }
  if (result.judge.length > 0) {
    const verdicts = await askJudge(job, state, result.judge);
    result = await evaluateWithAudit(job, { ...input, ...(facts !== undefined ? { facts, factsAsked: factsFor } : {}), verdicts });
  }
  return { plan: recordedPlan(result.plan), ...(prepared !== undefined ? { prepared } : {}) };
}

/** One evaluation, carrying the job's buffered audit events; the result says whether they were written. */
async function evaluateWithAudit(job: Job, input: EvaluatePolicyInput): Promise<EvaluatePolicyResult> {
  const audit = job.audit.carry();
  const result = await local.evaluatePolicy(audit === undefined ? input : { ...input, audit });
  job.audit.settle(audit, result.audit);
  return result;
}

/** The plan the recorded evaluation returned, checked against its schema. */
function recordedPlan(recorded: unknown): BatchPlan {
  const current = batchPlanSchema.safeParse(recorded);
  if (current.success) return current.data;
  throw new Error(`the policy evaluation returned no usable plan: ${current.error.issues[0]?.message ?? ''}`);
}

/**
 * Judge questions, side by side on the judge queue. A failure is a
 * verdict too (`failed`): the planner's failure table decides what it
 * means, and it never stops the job.
 */
async function askJudge(job: Job, state: JobState, requests: readonly JudgeRequest[]): Promise<Record<string, Record<string, JudgeVerdict>>> {
  const { model, timeoutMs } = state.snapshot.judge;
  const recentTurns = state.judgeContext();
  const answers = await Promise.all(
    requests.map(async (r) => {
      try {
        return await judge.judgeRules.executeWithOptions(
          {
            taskQueue: TaskQueues.judge,
            // Waiting for a busy or absent judge worker counts against the same short budget.
            scheduleToCloseTimeout: timeoutMs + 5_000,
            retry: { maximumAttempts: 1 },
            summary: `judge ${r.rules.length} rule(s) for ${r.call.tool}`,
          },
          [{ rules: r.rules, call: r.call, recentTurns, model, timeoutMs, cacheKey: r.cacheKey }],
        );
      } catch (err) {
        return { outcome: { status: 'error' as const, detail: describeError(err) }, latencyMs: 0, model, cached: false };
      }
    }),
  );
  const verdicts: Record<string, Record<string, JudgeVerdict>> = {};
  requests.forEach((r, i) => {
    const answer = answers[i];
    const outcome = answer?.outcome ?? { status: 'error' as const, detail: 'no answer' };
    const byRule: Record<string, JudgeVerdict> = {};
    for (const candidate of r.candidates) {
      const decision = outcome.status === 'ok' ? outcome.decisions.find((d) => d.ruleId === candidate.ruleId) : undefined;
      const verdict: JudgeVerdict = outcome.status !== 'ok' ? 'failed' : (decision?.result ?? 'unknown');
      byRule[candidate.ruleId] = verdict;
      job.audit.record({
        type: 'judge_result',
        data: {
          callId: r.callId,
          toolName: r.call.tool,
          ruleId: candidate.ruleId,
          result: verdict,
          confidence: decision?.confidence,
          status: outcome.status,
          detail: outcome.status === 'ok' ? undefined : outcome.detail,
          enforced: candidate.enforced,
          shadow: !candidate.enforced,
          latencyMs: answer?.latencyMs ?? 0,
          model: answer?.model ?? model,
          cached: answer?.cached ?? false,
        },
      });
    }
    verdicts[r.callId] = byRule;
  });
  return verdicts;
}

function auditPlan(job: Job, decided: BatchPlan): void {
  for (const p of decided.calls) auditPlanned(job, p);
}

function auditPlanned(job: Job, p: PlannedCall): void {
  const base = { callId: p.call.callId, toolName: p.call.toolName };
  switch (p.kind) {
    case 'error':
    case 'complete_held':
      return;
    case 'complete':
      if (p.evaluation !== undefined) auditMatches(job, base, p.evaluation.matches);
      return;
    case 'complete_rejected':
      auditMatches(job, base, p.evaluation.matches);
      for (const ruleId of p.ruleIds) {
        job.audit.record({ type: 'policy_tool_denied', data: { callId: base.callId, toolName: COMPLETE_TOOL, ruleId, reason: 'completion not accepted' } });
      }
      return;
    default:
      job.audit.record({
        type: 'policy_evaluation',
        data: { ...base, category: p.call.category, decision: p.evaluation.decision, outcome: p.kind, argsSummary: summarizeArgs(p.call.args), ...machineField(job, p.call) },
      });
      auditMatches(job, base, p.evaluation.matches, p.evaluation.detectors, p.call.args);
      if (p.kind === 'deny') {
        job.audit.record({ type: 'policy_tool_denied', data: { ...base, ruleId: p.ruleId, fingerprint: p.fingerprint, reason: p.message } });
      }
  }
}

/** The machine a call is for, in its audit events, when the tools config lists several. */
function machineField(job: Job, call: { readonly toolName: string; readonly args: unknown }): { machine?: string } {
  const snapshot = job.state?.snapshot;
  return snapshot === undefined ? {} : routeOf(snapshot, call).on;
}

function auditMatches(
  job: Job,
  base: { callId: string; toolName: string },
  matches: readonly RuleMatch[],
  detectors?: readonly string[],
  args?: unknown,
): void {
  for (const m of matches) {
    job.audit.record({
      type: 'policy_rule_matched',
      data: {
        ...base,
        ruleId: m.ruleId,
        ruleVersion: m.ruleVersion,
        action: m.action,
        shadow: m.shadow,
        ...(m.judged === true ? { detail: m.fallback === true ? 'judge failed: approval as fallback' : 'judge match' } : {}),
        ...(m.duplicate === true ? { outcome: 'duplicate' as const } : {}),
        ...(detectors !== undefined && detectors.length > 0 ? { detectors: [...detectors] } : {}),
      },
    });
    // notify_admin never restricts anyone: it queues a note for the administrator (audit log and notification endpoints).
    if (m.action === 'notify_admin' && !m.shadow && m.duplicate !== true) {
      const rule = job.state === undefined ? undefined : ruleById(job.state.snapshot, m.ruleId);
      const reason = rule === undefined ? undefined : [rule.name, rule.instruction].filter((x) => x !== undefined).join(' — ');
      job.audit.record({
        type: 'policy_notification_queued',
        data: { ...base, ruleId: m.ruleId, ruleVersion: m.ruleVersion, reason, argsSummary: args === undefined ? undefined : summarizeArgs(args) },
      });
    }
  }
}
