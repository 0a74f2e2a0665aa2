import { z } from 'zod';
import { parseDuration } from '../duration';
import type { ToolCategory } from '../tools/definitions';
import { conditionMatches } from './conditions';
import { ruleActions, type HookPoint, type Rule, type RuleAction } from './rules';
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
};

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
}

/** Per-rule fire history of one job, kept in workflow state. */
export type RuleCounters = Readonly<Record<string, { readonly fires: number; readonly lastFiredAt: number }>>;

export const ruleMatchSchema = z.strictObject({
  ruleId: z.string(),
  ruleVersion: z.number().int(),
  action: z.enum(ruleActions),
  decision: z.enum(gateDecisions),
  /** Shadow matches are audited and change nothing. */
  shadow: z.boolean(),
});
export type RuleMatch = z.infer<typeof ruleMatchSchema>;

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
});
export type CallEvaluation = z.infer<typeof callEvaluationSchema>;

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

/** Rules that could apply at this point to this call; no rules means no work at all. */
export function candidateRules(snapshot: PolicySnapshot, point: HookPoint, ctx: CallContext): Rule[] {
  if (snapshot.rules.length === 0) return [];
  return snapshot.rules.filter((rule) => rule.enabled && inScope(rule, point, ctx));
}

/** Deterministic evaluation of one call: scope, conditions, limits, then conflict resolution. */
export function evaluateCall(
  snapshot: PolicySnapshot,
  point: HookPoint,
  ctx: CallContext,
  counters: RuleCounters,
  now: number,
): CallEvaluation {
  const matches: RuleMatch[] = [];
  const limited: string[] = [];
  const acting: Array<{ match: RuleMatch; rule: Rule }> = [];
  for (const rule of candidateRules(snapshot, point, ctx)) {
    if (rule.when !== undefined && !conditionMatches(rule.when, ctx.args)) continue;
    const match: RuleMatch = {
      ruleId: rule.id,
      ruleVersion: rule.version,
      action: rule.action,
      decision: decisionForAction[rule.action],
      shadow: rule.shadow,
    };
    if (!rule.shadow && limitedNow(rule, counters, now)) {
      limited.push(rule.id);
      continue;
    }
    matches.push(match);
    if (!rule.shadow) acting.push({ match, rule });
  }
  let decision: GateDecision = 'allow';
  for (const { match } of acting) decision = strongerDecision(decision, match.decision);
  const deciding = acting.find((a) => a.match.decision === decision)?.match;
  const instructions: string[] = [];
  const ordered = [...acting].sort((a, b) => priority[b.match.decision] - priority[a.match.decision]);
  for (const { rule } of ordered) {
    if (rule.instruction !== undefined && !instructions.includes(rule.instruction)) instructions.push(rule.instruction);
  }
  return { decision, matches, ...(deciding !== undefined ? { deciding } : {}), instructions, limited };
}

export function ruleById(snapshot: PolicySnapshot, id: string): Rule | undefined {
  return snapshot.rules.find((r) => r.id === id);
}

/** Advances fire counters for the rules that acted. */
export function recordFires(counters: RuleCounters, matches: readonly RuleMatch[], now: number): RuleCounters {
  const next: Record<string, { fires: number; lastFiredAt: number }> = { ...counters };
  for (const m of matches) {
    if (m.shadow) continue;
    next[m.ruleId] = { fires: (next[m.ruleId]?.fires ?? 0) + 1, lastFiredAt: now };
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
