import { plan } from './batch-plan';
import { type Planned, type PlannedCall } from './plan-schema';
import { callContext } from './call-context';
import { evaluateCall, needsFacts } from '../policy/evaluate';
import { recordFires } from '../policy/rule-fires';
import { decisionForAction, strongerDecision, type CallEvaluation, type GateDecision, type RuleCounters } from '../policy/call-evaluation';
import type { JobScope } from '../policy/rules';
import type { CallFacts } from '../tools/facts';
import type { PolicySnapshot } from '../policy/snapshot';
import type { ToolCall } from './preflight';

/**
 * Rehearsal: the tool calls recorded in past jobs, decided again under
 * other rules by the same planner a job uses. Nothing runs; this is pure.
 */

/** What the gate decides for a call, in the words people read. */
export const verdicts = ['allowed', 'needs approval', 'denied', 'redirected', 'stopped'] as const;
export type Verdict = (typeof verdicts)[number];

/** What became of a recorded call: the gate's verdict, and for a gated call what the reviewer (or the clock) did. */
export const happenings = ['allowed', 'approved', 'denied by reviewer', 'expired', 'withdrawn', 'pending', 'undecided', 'denied', 'redirected', 'stopped'] as const;
export type Happened = (typeof happenings)[number];

export type PlannedToolKind = Extract<PlannedCall['kind'], 'run' | 'approval' | 'deny' | 'redirect' | 'stop'>;

export interface RecordedCall {
  readonly call: ToolCall;
  /** What the job's gate planned for it. */
  readonly planned: PlannedToolKind;
  /** The rule that decided it then (none for an allowed call). */
  readonly ruleId: string | null;
  readonly happened: Happened;
  /** The tools side's facts of its targets, when the job resolved them. */
  readonly facts?: CallFacts | undefined;
}

export interface RecordedBatch {
  readonly runId: string;
  /** When the job's gate decided it (ms since the epoch): cooldowns count from here. */
  readonly at: number;
  readonly calls: readonly RecordedCall[];
}

/** One job (every run of it that was read), its batches in the order they were decided. */
export interface RecordedJob {
  readonly jobId: string;
  readonly scope: JobScope;
  /** The tools' roots in the job's own snapshot; unknown for a job whose snapshot was not read. */
  readonly roots: readonly string[] | undefined;
  readonly maxApprovalRequests: number;
  readonly batches: readonly RecordedBatch[];
}

/** Where the facts a rehearsed call was decided on came from. */
export type FactsSource = 'recorded' | 'now' | 'none';

/** An enforced judged rule whose `match` would make the decision stronger: the judge is not asked in a rehearsal. */
export interface JudgeQuestion {
  readonly ruleId: string;
  readonly ifMatch: Verdict;
}

export interface RehearsedCall {
  readonly jobId: string;
  readonly runId: string;
  readonly at: number;
  readonly callId: string;
  readonly toolName: string;
  readonly args: Record<string, unknown>;
  readonly happened: Happened;
  readonly before: { readonly verdict: Verdict; readonly ruleId: string | null };
  readonly after: { readonly verdict: Verdict; readonly ruleId: string | null; readonly judge: readonly JudgeQuestion[] };
  readonly facts: FactsSource;
  /** The verdict differs, or the judge could make it differ. */
  readonly changed: boolean;
}

const verdictOfKind: Record<PlannedToolKind, Verdict> = {
  run: 'allowed',
  approval: 'needs approval',
  deny: 'denied',
  redirect: 'redirected',
  stop: 'stopped',
};

const verdictOfDecision: Record<GateDecision, Verdict> = {
  allow: 'allowed',
  audit_only: 'allowed',
  require_approval: 'needs approval',
  deny: 'denied',
  redirect: 'redirected',
  stop: 'stopped',
};

const decisionOfVerdict: Record<Verdict, GateDecision> = {
  allowed: 'allow',
  'needs approval': 'require_approval',
  denied: 'deny',
  redirected: 'redirect',
  stopped: 'stop',
};

/** The plan of a tool call the gate decided (not an error, not `complete`). */
export function toolPlanOf(p: PlannedCall): Planned<PlannedToolKind> | undefined {
  switch (p.kind) {
    case 'run':
    case 'approval':
    case 'deny':
    case 'redirect':
    case 'stop':
      return p;
    default:
      return undefined;
  }
}

/** Key of a call across a job's runs. */
export function callKey(runId: string, callId: string): string {
  return `${runId}/${callId}`;
}

/**
 * Calls the rules would look at the targets of (a path rule, a link or
 * mode detector) whose job never resolved them: only the file system can
 * answer, as it is now.
 */
export function callsNeedingFacts(job: RecordedJob, snapshot: PolicySnapshot): Array<{ readonly key: string; readonly call: ToolCall }> {
  return job.batches.flatMap((b) =>
    b.calls.flatMap((c) =>
      c.facts === undefined && needsFacts(snapshot, 'tool.before', callContext(job.jobId, job.scope, c.call, undefined, snapshot.machines))
        ? [{ key: callKey(b.runId, c.call.callId), call: c.call }]
        : [],
    ),
  );
}

/** Enforced judged candidates that could outrank the deterministic decision, as they would be asked. */
function judgeQuestions(snapshot: PolicySnapshot, evaluation: CallEvaluation, verdict: Verdict): JudgeQuestion[] {
  const current = decisionOfVerdict[verdict];
  return evaluation.judgeCandidates.flatMap((c) => {
    const rule = snapshot.rules.find((r) => r.id === c.ruleId);
    if (!c.enforced || rule === undefined) return [];
    const decision = decisionForAction[rule.action];
    // A judge failure sends an enforced approval rule to approval too: either way it is the rule's decision.
    return strongerDecision(current, decision) !== current ? [{ ruleId: c.ruleId, ifMatch: verdictOfDecision[decision] }] : [];
  });
}

/**
 * Decides a job's recorded batches again under `snapshot`: each batch by
 * `plan`, with per-job memory carried from batch to batch as the job
 * would (rule fire counters, the approval budget, redirects; a call a
 * reviewer denied or let expire is taken as denied again). Facts are the
 * recorded ones, else those in `factsNow` (by `callKey`), else unknown.
 */
export function rehearseJob(job: RecordedJob, snapshot: PolicySnapshot, factsNow: ReadonlyMap<string, CallFacts> = new Map()): RehearsedCall[] {
  let counters: RuleCounters = {};
  let approvalRequests = 0;
  const deniedFingerprints: string[] = [];
  const redirectedFingerprints: string[] = [];
  const out: RehearsedCall[] = [];
  for (const batch of job.batches) {
    const evaluations = new Map<string, CallEvaluation>();
    const sources = new Map<string, FactsSource>();
    for (const recorded of batch.calls) {
      const now = factsNow.get(callKey(batch.runId, recorded.call.callId));
      const facts = recorded.facts ?? now;
      sources.set(recorded.call.callId, recorded.facts !== undefined ? 'recorded' : now !== undefined ? 'now' : 'none');
      const ctx = callContext(job.jobId, job.scope, recorded.call, facts, snapshot.machines);
      evaluations.set(recorded.call.callId, evaluateCall(snapshot, 'tool.before', ctx, counters, batch.at));
    }
    const decided = plan({
      jobId: job.jobId,
      scope: job.scope,
      snapshot,
      calls: batch.calls.map((c) => c.call),
      evaluations,
      memory: { deniedFingerprints, redirectedFingerprints, approvalRequests, maxApprovalRequests: job.maxApprovalRequests, completionRuleFires: [] },
      ruleCounters: counters,
      now: batch.at,
    });
    counters = recordFires(counters, decided.fires, batch.at);
    batch.calls.forEach((recorded, i) => {
      const planned = decided.calls[i];
      const p = planned === undefined ? undefined : toolPlanOf(planned);
      if (p === undefined) return;
      const evaluation = evaluations.get(recorded.call.callId);
      if (p.kind === 'approval') {
        approvalRequests++;
        if (recorded.happened === 'denied by reviewer' || recorded.happened === 'expired') deniedFingerprints.push(p.fingerprint);
      }
      if (p.kind === 'redirect' && !redirectedFingerprints.includes(p.fingerprint)) redirectedFingerprints.push(p.fingerprint);
      const verdict = verdictOfKind[p.kind];
      const ruleId = p.kind === 'run' ? null : p.ruleId;
      const judge = evaluation === undefined ? [] : judgeQuestions(snapshot, evaluation, verdict);
      const before = { verdict: verdictOfKind[recorded.planned], ruleId: recorded.ruleId };
      out.push({
        jobId: job.jobId,
        runId: batch.runId,
        at: batch.at,
        callId: recorded.call.callId,
        toolName: recorded.call.toolName,
        args: recorded.call.args,
        happened: recorded.happened,
        before,
        after: { verdict, ruleId, judge },
        facts: sources.get(recorded.call.callId) ?? 'none',
        changed: (verdict !== before.verdict && !sameEffect(recorded.happened, verdict)) || judge.length > 0,
      });
    });
  }
  return out;
}

/**
 * A reviewer's denial (or an expiry, or an operator's withdrawal) is not a rule outcome: a call that was
 * denied that way and that the rules would now deny outright did not run and
 * would not run. Not a change.
 */
function sameEffect(happened: Happened, verdict: Verdict): boolean {
  return verdict === 'denied' && (happened === 'denied by reviewer' || happened === 'expired' || happened === 'withdrawn');
}

/** How a change reads: what happened → what the rules would decide. */
export function changeLabel(c: RehearsedCall): string {
  const to = c.after.judge.length > 0 ? `${c.after.verdict}, or ${c.after.judge.map((j) => j.ifMatch).join('/')} if the judge matches` : c.after.verdict;
  return `${c.happened} → ${to}`;
}

/** The rule a change is counted under: the one deciding now, else the judged one, else the one that decided before. */
export function changeRule(c: RehearsedCall): string {
  return c.after.ruleId ?? c.after.judge[0]?.ruleId ?? c.before.ruleId ?? '(no rule)';
}

export interface RuleSummary {
  readonly ruleId: string;
  readonly changes: number;
  /** By change label. */
  readonly by: Readonly<Record<string, number>>;
}

/** Changed calls counted per rule, most changes first (rule id on a tie). */
export function summarizeByRule(changes: readonly RehearsedCall[]): RuleSummary[] {
  const rules = new Map<string, { changes: number; by: Record<string, number> }>();
  for (const c of changes) {
    const id = changeRule(c);
    const entry = rules.get(id) ?? { changes: 0, by: {} };
    entry.changes++;
    const label = changeLabel(c);
    entry.by[label] = (entry.by[label] ?? 0) + 1;
    rules.set(id, entry);
  }
  return [...rules.entries()]
    .map(([ruleId, e]) => ({ ruleId, changes: e.changes, by: e.by }))
    .sort((a, b) => b.changes - a.changes || a.ruleId.localeCompare(b.ruleId));
}
