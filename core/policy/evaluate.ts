import { z } from 'zod';
import { parseDuration } from '../duration';
import type { ToolCategory } from '../tools/definitions';
import { conditionMatches, type DetectorProbe } from './conditions';
import { getTool } from '../tools/definitions';
import { detect, detectorNames, replacedTarget, type DetectorName } from './detectors';
import { factOf, type CallFacts } from './facts';
import { ruleActions, type Condition, type HookPoint, type Rule, type RuleAction } from './rules';
import type { PolicySnapshot } from './snapshot';

/** What the gate decides for one call. */
export const gateDecisions = ['allow', 'audit_only', 'redirect', 'deny', 'require_approval', 'stop'] as const;
export type GateDecision = (typeof gateDecisions)[number];

/** Conflicting rule actions on one call resolve by this order, highest first. */
const priority: Record<GateDecision, number> = {
  stop: 5,
  deny: 4,
  require_approval: 3,
  redirect: 2,
  audit_only: 1,
  allow: 0,
};

export function strongerDecision(a: GateDecision, b: GateDecision): GateDecision {
  return priority[b] > priority[a] ? b : a;
}

export const decisionForAction: Record<RuleAction, GateDecision> = {
  inject_instruction: 'redirect',
  deny_current_tool: 'deny',
  request_approval: 'require_approval',
  stop_task: 'stop',
  audit_only: 'audit_only',
  notify_admin: 'audit_only',
};

/** Observational actions: a repeat on the same call state is de-duplicated, not recorded again. */
const observational: ReadonlySet<RuleAction> = new Set(['audit_only', 'notify_admin']);

/** The piece/movement a job runs in; rules may be scoped to them. */
export interface JobScope {
  readonly piece?: string | undefined;
  readonly movement?: string | undefined;
}

export interface CallContext {
  readonly toolName: string;
  readonly category: ToolCategory;
  /** Arguments after schema parsing (defaults filled in). */
  readonly args: unknown;
  readonly scope: JobScope;
  /** The paths the call acts on, for the detectors. */
  readonly targets?: readonly string[];
  /** What the tools side saw of the targets (real paths, links, what exists). */
  readonly facts?: CallFacts | undefined;
  /** The call's state fingerprint (ungated), for de-duplicating observational rules. */
  readonly fingerprint?: string;
}

/** Per-rule fire history of one job, kept in workflow state. */
export const ruleCountersSchema = z.record(
  z.string(),
  z.strictObject({ fires: z.number().int(), lastFiredAt: z.number(), lastFingerprint: z.string().optional() }),
);
export type RuleCounters = z.infer<typeof ruleCountersSchema>;

/** The judge's answer for one rule, or why there is none. */
export type JudgeVerdict = 'match' | 'no_match' | 'unknown' | 'failed';

export const ruleMatchSchema = z.strictObject({
  ruleId: z.string(),
  ruleVersion: z.number().int(),
  action: z.enum(ruleActions),
  decision: z.enum(gateDecisions),
  /** Shadow matches are audited and change nothing. */
  shadow: z.boolean(),
  /** Decided by the judge (a natural-language condition). */
  judged: z.boolean().optional(),
  /** Acting without a judge `match`: the failure table sent it to approval. */
  fallback: z.boolean().optional(),
  /** An observational rule that already fired on this exact call state. */
  duplicate: z.boolean().optional(),
});
export type RuleMatch = z.infer<typeof ruleMatchSchema>;

export const judgeCandidateSchema = z.strictObject({
  ruleId: z.string(),
  condition: z.string(),
  /** Whether a `match` may act (else the result is only audited). */
  enforced: z.boolean(),
});
export type JudgeCandidate = z.infer<typeof judgeCandidateSchema>;

export const callEvaluationSchema = z.strictObject({
  decision: z.enum(gateDecisions),
  /** Every matching rule, shadow ones included, in file order. */
  matches: z.array(ruleMatchSchema),
  /** The first rule (file order) whose action is the winning decision. */
  deciding: ruleMatchSchema.optional(),
  /** Registered instructions of the acting rules, highest priority first, without duplicates. */
  instructions: z.array(z.string()),
  /** Rules that matched but were held back by maxFires or cooldown. */
  limited: z.array(z.string()),
  /** Built-in detectors that fired while rules were checked. */
  detectors: z.array(z.enum(detectorNames)).default([]),
  /** Judged rules whose deterministic part holds and that wait for the judge. */
  judgeCandidates: z.array(judgeCandidateSchema).default([]),
});
export type CallEvaluation = z.output<typeof callEvaluationSchema>;

function inScope(rule: Rule, point: HookPoint, ctx: CallContext): boolean {
  if (rule.point !== point) return false;
  const s = rule.scope;
  if (s.tools !== undefined && !s.tools.includes(ctx.toolName)) return false;
  if (s.categories !== undefined && !s.categories.includes(ctx.category)) return false;
  if (s.piece !== undefined && (ctx.scope.piece === undefined || !s.piece.includes(ctx.scope.piece))) return false;
  if (s.movement !== undefined && (ctx.scope.movement === undefined || !s.movement.includes(ctx.scope.movement))) {
    return false;
  }
  return true;
}

/** Whether a rule has a deterministic part (scope or `when`) that singles out some calls. */
function narrowsCalls(rule: Rule): boolean {
  const s = rule.scope;
  return rule.when !== undefined || s.tools !== undefined || s.categories !== undefined || s.piece !== undefined || s.movement !== undefined;
}

function limitedNow(rule: Rule, counters: RuleCounters, now: number): boolean {
  const seen = counters[rule.id];
  if (seen === undefined || rule.limits === undefined) return false;
  if (rule.limits.maxFires !== undefined && seen.fires >= rule.limits.maxFires) return true;
  if (rule.limits.cooldown !== undefined) {
    const cooldown = parseDuration(rule.limits.cooldown) ?? 0;
    if (now - seen.lastFiredAt < cooldown) return true;
  }
  return false;
}

/** Runs each detector at most once per call, on demand, and remembers which fired. */
export function detectorProbe(snapshot: PolicySnapshot, ctx: CallContext): { probe: DetectorProbe; fired: () => DetectorName[] } {
  const probed = new Map<DetectorName, boolean>();
  const probe: DetectorProbe = (name) => {
    let result = probed.get(name);
    if (result === undefined) {
      result = detect(name, {
        toolName: ctx.toolName,
        category: ctx.category,
        args: ctx.args,
        targets: ctx.targets ?? [],
        settings: snapshot.detectors,
        facts: ctx.facts,
      });
      probed.set(name, result);
    }
    return result;
  };
  return { probe, fired: () => detectorNames.filter((name) => probed.get(name) === true) };
}

/**
 * The arguments a rule's condition is tried on. A path argument is tried
 * as written and as the real place the tools side found behind it; for a
 * tool with several targets (`fs_move`), `path` stands for each in turn.
 * A rule holds when it holds for any of these: an alias or a respelling
 * never slips past a rule about the place.
 */
export function argViews(ctx: CallContext): unknown[] {
  const fields = getTool(ctx.toolName)?.pathFields ?? [];
  const args = ctx.args;
  if (fields.length === 0 || args === null || typeof args !== 'object' || Array.isArray(args)) return [args];
  const views: unknown[] = [];
  for (const field of fields) {
    const written: unknown = Object.getOwnPropertyDescriptor(args, field)?.value;
    if (typeof written !== 'string') continue;
    const real = factOf(ctx.facts, written)?.real;
    for (const spelling of real === undefined || real === null || real === written ? [written] : [written, real]) {
      views.push({ ...args, [field]: spelling, path: spelling });
    }
  }
  return views.length > 0 ? views : [args];
}

const factDetectors: ReadonlySet<string> = new Set<DetectorName>(['symlink_path', 'mode_widening']);

function conditionNeedsFacts(condition: Condition, pathArgs: ReadonlySet<string>, ambiguous: boolean): boolean {
  if ('all' in condition) return condition.all.some((c) => conditionNeedsFacts(c, pathArgs, ambiguous));
  if ('any' in condition) return condition.any.some((c) => conditionNeedsFacts(c, pathArgs, ambiguous));
  if ('not' in condition) return conditionNeedsFacts(condition.not, pathArgs, ambiguous);
  if ('detector' in condition) return factDetectors.has(condition.detector) || (condition.detector === 'destroys_data' && ambiguous);
  return pathArgs.has(condition.arg);
}

/**
 * Whether a rule that could apply to this call looks at its targets (a
 * path predicate, a link or mode detector, or whether a replaced target
 * exists): then the tools side resolves them before the call is decided.
 */
export function needsFacts(snapshot: PolicySnapshot, point: HookPoint, ctx: CallContext): boolean {
  const pathArgs = new Set(['path', ...(getTool(ctx.toolName)?.pathFields ?? [])]);
  const ambiguous = replacedTarget(ctx.toolName, ctx.args) !== undefined;
  return candidateRules(snapshot, point, ctx).some((rule) => rule.when !== undefined && conditionNeedsFacts(rule.when, pathArgs, ambiguous));
}

/** Rules that could apply at this point to this call; no rules means no work at all. */
export function candidateRules(snapshot: PolicySnapshot, point: HookPoint, ctx: CallContext): Rule[] {
  if (snapshot.rules.length === 0) return [];
  return snapshot.rules.filter((rule) => rule.enabled && inScope(rule, point, ctx));
}

export interface EvaluateOptions {
  /**
   * Judge answers for this call's judged rules. Without this option judged
   * rules are returned as candidates; with it, a rule it does not answer
   * counts as a failed judgement.
   */
  readonly verdicts?: Readonly<Record<string, JudgeVerdict>>;
}

/**
 * Deterministic evaluation of one call: scope first (no candidate, no work),
 * then `when` (predicates and detectors), judge verdicts for judged rules,
 * limits and de-duplication, then conflict resolution.
 *
 * Judge failure table: a judged rule acts only on `match` and only when
 * enforced; on `unknown` or a failed judge an enforced `request_approval`
 * rule whose deterministic part (scope or `when`) singles out this call
 * still asks for approval; nothing else fires. Deterministic rules never
 * depend on the judge.
 */
export function evaluateCall(
  snapshot: PolicySnapshot,
  point: HookPoint,
  ctx: CallContext,
  counters: RuleCounters,
  now: number,
  options: EvaluateOptions = {},
): CallEvaluation {
  const matches: RuleMatch[] = [];
  const limited: string[] = [];
  const candidates: JudgeCandidate[] = [];
  const acting: Array<{ match: RuleMatch; rule: Rule }> = [];
  const { probe, fired } = detectorProbe(snapshot, ctx);
  const views = argViews(ctx);
  for (const rule of candidateRules(snapshot, point, ctx)) {
    const when = rule.when;
    if (when !== undefined && !views.some((view) => conditionMatches(when, view, probe))) continue;
    const base: RuleMatch = {
      ruleId: rule.id,
      ruleVersion: rule.version,
      action: rule.action,
      decision: decisionForAction[rule.action],
      shadow: rule.shadow,
    };
    let match = base;
    if (rule.condition !== undefined) {
      const verdict = options.verdicts === undefined ? undefined : (options.verdicts[rule.id] ?? 'failed');
      const enforced = rule.enforceJudge && !rule.shadow;
      if (verdict === undefined) {
        candidates.push({ ruleId: rule.id, condition: rule.condition, enforced });
        continue;
      }
      if (verdict === 'match') match = { ...base, judged: true, shadow: !enforced };
      else if (enforced && rule.action === 'request_approval' && narrowsCalls(rule) && verdict !== 'no_match') {
        match = { ...base, judged: true, fallback: true };
      } else continue;
    }
    const seen = counters[rule.id];
    if (observational.has(rule.action) && ctx.fingerprint !== undefined && seen?.lastFingerprint === ctx.fingerprint) {
      matches.push({ ...match, duplicate: true });
      continue;
    }
    if (!match.shadow && limitedNow(rule, counters, now)) {
      limited.push(rule.id);
      continue;
    }
    matches.push(match);
    if (!match.shadow) acting.push({ match, rule });
  }
  let decision: GateDecision = 'allow';
  for (const { match } of acting) decision = strongerDecision(decision, match.decision);
  const deciding = acting.find((a) => a.match.decision === decision)?.match;
  const instructions: string[] = [];
  const ordered = [...acting].sort((a, b) => priority[b.match.decision] - priority[a.match.decision]);
  for (const { rule } of ordered) {
    if (rule.instruction !== undefined && !instructions.includes(rule.instruction)) instructions.push(rule.instruction);
  }
  return {
    decision,
    matches,
    ...(deciding !== undefined ? { deciding } : {}),
    instructions,
    limited,
    detectors: fired(),
    judgeCandidates: candidates,
  };
}

export function ruleById(snapshot: PolicySnapshot, id: string): Rule | undefined {
  return snapshot.rules.find((r) => r.id === id);
}

/** A rule that acted on a call, with the call's state fingerprint. */
export const ruleFireSchema = ruleMatchSchema.extend({ stateFingerprint: z.string().optional() });
export type RuleFire = z.infer<typeof ruleFireSchema>;

/** Advances fire counters for the rules that acted (duplicates and shadows do not count). */
export function recordFires(counters: RuleCounters, fires: readonly RuleFire[], now: number): RuleCounters {
  const next: Record<string, RuleCounters[string]> = { ...counters };
  for (const f of fires) {
    if (f.shadow || f.duplicate === true) continue;
    next[f.ruleId] = {
      fires: (next[f.ruleId]?.fires ?? 0) + 1,
      lastFiredAt: now,
      ...(f.stateFingerprint !== undefined ? { lastFingerprint: f.stateFingerprint } : {}),
    };
  }
  return next;
}

/** Per batch: any stop ends the job; any approval parks it; any redirect re-plans; otherwise it runs. */
export type BatchOutcome = 'stop' | 'park' | 'redirect' | 'run';

export function batchOutcome(decisions: readonly GateDecision[]): BatchOutcome {
  if (decisions.includes('stop')) return 'stop';
  if (decisions.includes('require_approval')) return 'park';
  if (decisions.includes('redirect')) return 'redirect';
  return 'run';
}
