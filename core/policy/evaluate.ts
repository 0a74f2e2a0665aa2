/**
 * core/policy/ — Rules and their evaluation: the rules file schema, the
 * built-in rules and deterministic detectors, conditions and their index,
 * the snapshot frozen for a job, the decision for one call and for a batch,
 * and the labelled judge evaluation. This file decides one call.
 *
 * May import: util, tools, judge.
 */

import { factOf } from '../tools/facts';
import { getTool } from '../tools/registry';
import { pathTargets } from '../tools/tool-module';
import { parseDuration } from '../util/duration';
import { type CallContext, type CallEvaluation, type GateDecision, type JudgeCandidate, type JudgeVerdict, type RuleCounters, type RuleMatch, decisionForAction, observational, priority } from './call-evaluation';
import type { CompiledCondition, DetectorProbe } from './conditions';
import { type DetectorInput, type DetectorName, detect, detectorNames, replacedTarget } from './detectors';
import { compiledWhen, inJobScope, indexedCandidates } from './rule-index';
import { type Condition, type HookPoint, type Rule } from './rules';
import type { PolicySnapshot } from './snapshot';

/** Whether a rule has a deterministic part (scope or `when`) that singles out some calls. */
function narrowsCalls(rule: Rule): boolean {
  const s = rule.scope;
  return rule.when !== undefined || s.tools !== undefined || s.categories !== undefined || s.piece !== undefined || s.movement !== undefined;
}

function limitedNow(rule: Rule, counters: RuleCounters, now: number): boolean {
  // Most rules have no limits: then the counters need not be looked up at all.
  if (rule.limits === undefined) return false;
  const seen = counters[rule.id];
  if (seen === undefined) return false;
  if (rule.limits.maxFires !== undefined && seen.fires >= rule.limits.maxFires) return true;
  if (rule.limits.cooldown !== undefined) {
    const cooldown = parseDuration(rule.limits.cooldown) ?? 0;
    if (now - seen.lastFiredAt < cooldown) return true;
  }
  return false;
}

/** Runs each detector at most once per call, on demand, and remembers which fired. */
export function detectorProbe(snapshot: PolicySnapshot, ctx: CallContext): { probe: DetectorProbe; fired: () => DetectorName[] } {
  let probed: Map<DetectorName, boolean> | undefined;
  let input: DetectorInput | undefined;
  const probe: DetectorProbe = (name) => {
    probed ??= new Map();
    let result = probed.get(name);
    if (result === undefined) {
      input ??= {
        toolName: ctx.toolName,
        category: ctx.category,
        args: ctx.args,
        targets: ctx.targets ?? [],
        settings: snapshot.detectors,
        facts: ctx.facts,
        ...(ctx.factsMissing === true ? { factsMissing: true } : {}),
      };
      result = detect(name, input);
      probed.set(name, result);
    }
    return result;
  };
  return { probe, fired: () => (probed === undefined ? [] : detectorNames.filter((name) => probed?.get(name) === true)) };
}

function ownString(args: object, field: string): string | undefined {
  if (!Object.prototype.hasOwnProperty.call(args, field)) return undefined;
  const value: unknown = Reflect.get(args, field);
  return typeof value === 'string' ? value : undefined;
}

/**
 * The arguments a rule's condition is tried on. A path argument is tried
 * as written and as the real place the tools side found behind it; for a
 * tool with several targets (`fs_move`), `path` stands for each in turn.
 * A rule holds when it holds for any of these: an alias or a respelling
 * never slips past a rule about the place.
 */
export function argViews(ctx: CallContext): unknown[] {
  const tool = getTool(ctx.toolName);
  const fields = tool?.pathFields ?? [];
  const args = ctx.args;
  // Paths nested in a list (a bulk move's entries, an undo of one): `path` stands for each of them, as written and as resolved. A call naming its paths at the top level (an undo of one change) is viewed field by field.
  if (tool?.pathsOf !== undefined && args !== null && typeof args === 'object' && !Array.isArray(args) && fields.every((f) => ownString(args, f) === undefined)) {
    return nestedViews(ctx, pathTargets(tool, args), args);
  }
  if (fields.length === 0 || args === null || typeof args !== 'object' || Array.isArray(args)) return [args];
  const only = fields.length === 1 ? fields[0] : undefined;
  if (only === 'path') {
    // The common case: a view of the one path as written is the arguments themselves.
    const written = ownString(args, only);
    if (written === undefined) return [args];
    const real = factOf(ctx.facts, written)?.real;
    if (real === undefined || real === null || real === written) return [args];
  }
  const views: unknown[] = [];
  for (const field of fields) {
    const written = ownString(args, field);
    if (written === undefined) continue;
    const real = factOf(ctx.facts, written)?.real;
    for (const spelling of real === undefined || real === null || real === written ? [written] : [written, real]) {
      // `path` first: adding a key to a spread copy is a slow path in V8. Conditions read keys by name, so order is moot.
      const view: Record<string, unknown> = { path: spelling, ...args };
      view.path = spelling;
      view[field] = spelling;
      views.push(view);
    }
  }
  return views.length > 0 ? views : [args];
}

function nestedViews(ctx: CallContext, paths: readonly string[], args: object): unknown[] {
  const views: unknown[] = [];
  for (const written of paths) {
    const real = factOf(ctx.facts, written)?.real;
    for (const spelling of real === undefined || real === null || real === written ? [written] : [written, real]) views.push({ ...args, path: spelling });
  }
  return views.length > 0 ? views : [args];
}

const factDetectors: ReadonlySet<string> = new Set<DetectorName>(['symlink_path', 'mode_widening', 'hard_link']);

function conditionNeedsFacts(condition: Condition, pathArgs: ReadonlySet<string>, ambiguous: boolean, command: boolean): boolean {
  if ('all' in condition) return condition.all.some((c) => conditionNeedsFacts(c, pathArgs, ambiguous, command));
  if ('any' in condition) return condition.any.some((c) => conditionNeedsFacts(c, pathArgs, ambiguous, command));
  if ('not' in condition) return conditionNeedsFacts(condition.not, pathArgs, ambiguous, command);
  if ('detector' in condition) {
    // A deny list matches the program a command really runs, which only the tools side can tell.
    return factDetectors.has(condition.detector) || (condition.detector === 'destroys_data' && ambiguous) || (condition.detector === 'denied_command' && command);
  }
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
  return indexedCandidates(snapshot, point, ctx.toolName, ctx.category).some(
    (entry) => entry.rule.when !== undefined && (!entry.jobScoped || inJobScope(entry.rule, ctx.scope, ctx.machine)) && conditionNeedsFacts(entry.rule.when, pathArgs, ambiguous, ctx.category === 'command_execution'),
  );
}

/**
 * Whether some rule that could apply at this point asks a reviewer: only
 * such a call can park (shadow and judged rules count too: the job's
 * settings may enforce them).
 */
export function mayRequestApproval(snapshot: PolicySnapshot, point: HookPoint, ctx: CallContext): boolean {
  return candidateRules(snapshot, point, ctx).some((rule) => rule.action === 'request_approval');
}

/** Rules that could apply at this point to this call, in file order; no rules means no work at all. */
export function candidateRules(snapshot: PolicySnapshot, point: HookPoint, ctx: CallContext): Rule[] {
  return indexedCandidates(snapshot, point, ctx.toolName, ctx.category).flatMap((entry) =>
    entry.jobScoped && !inJobScope(entry.rule, ctx.scope, ctx.machine) ? [] : [entry.rule],
  );
}

/**
 * A rule's match, its keys in the order they have always had. Built key by
 * key: a spread copy that gains a key is a slow path in V8.
 */
function matchOf(rule: Rule, shadow: boolean, judged: boolean, fallback: boolean): RuleMatch {
  const match: RuleMatch = { ruleId: rule.id, ruleVersion: rule.version, action: rule.action, decision: decisionForAction[rule.action], shadow };
  if (judged) match.judged = true;
  if (fallback) match.fallback = true;
  return match;
}

/** Whether a condition holds for any view of the arguments. */
function holdsForAny(when: CompiledCondition, views: readonly unknown[], probe: DetectorProbe): boolean {
  for (const view of views) if (when(view, probe)) return true;
  return false;
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
  const entries = indexedCandidates(snapshot, point, ctx.toolName, ctx.category);
  const matches: RuleMatch[] = [];
  const limited: string[] = [];
  const candidates: JudgeCandidate[] = [];
  const acting: Array<{ match: RuleMatch; rank: number; instruction: string | undefined }> = [];
  // Made on the first `when`: a call no condition looks at costs no views and no detectors.
  let views: unknown[] | undefined;
  let detectors: ReturnType<typeof detectorProbe> | undefined;
  for (const entry of entries) {
    if (entry.jobScoped && !inJobScope(entry.rule, ctx.scope, ctx.machine)) continue;
    const when = compiledWhen(entry);
    if (when !== undefined) {
      views ??= argViews(ctx);
      detectors ??= detectorProbe(snapshot, ctx);
      if (!holdsForAny(when, views, detectors.probe)) continue;
    }
    const rule = entry.rule;
    let match: RuleMatch;
    if (rule.condition !== undefined) {
      const verdict = options.verdicts === undefined ? undefined : (options.verdicts[rule.id] ?? 'failed');
      const enforced = rule.enforceJudge && !rule.shadow;
      if (verdict === undefined) {
        candidates.push({ ruleId: rule.id, condition: rule.condition, enforced });
        continue;
      }
      if (verdict === 'match') match = matchOf(rule, !enforced, true, false);
      else if (enforced && rule.action === 'request_approval' && narrowsCalls(rule) && verdict !== 'no_match') {
        match = matchOf(rule, rule.shadow, true, true);
      } else continue;
    } else match = matchOf(rule, rule.shadow, false, false);
    if (observational.has(rule.action) && ctx.fingerprint !== undefined && counters[rule.id]?.lastFingerprint === ctx.fingerprint) {
      match.duplicate = true;
      matches.push(match);
      continue;
    }
    if (!match.shadow && limitedNow(rule, counters, now)) {
      limited.push(rule.id);
      continue;
    }
    matches.push(match);
    if (!match.shadow) acting.push({ match, rank: priority[match.decision], instruction: rule.instruction });
  }
  // The highest priority wins, and the first acting rule (file order) with it decides.
  let best = -1;
  let deciding: RuleMatch | undefined;
  for (const a of acting) {
    if (a.rank <= best) continue;
    best = a.rank;
    deciding = a.match;
  }
  const decision: GateDecision = deciding?.decision ?? 'allow';
  // Highest priority first, file order within one: a stable sort by priority, without sorting.
  const instructions: string[] = [];
  // Texts taken so far, found by hash rather than compared character by character with each one.
  let seen: Set<string> | undefined;
  for (let rank = best; rank >= 0; rank--) {
    for (const a of acting) {
      const text = a.instruction;
      if (a.rank !== rank || text === undefined) continue;
      seen ??= new Set();
      if (seen.has(text)) continue;
      seen.add(text);
      instructions.push(text);
    }
  }
  const fired = detectors === undefined ? [] : detectors.fired();
  // Two literals rather than a spread: the same keys in the same order, without a copy.
  return deciding === undefined
    ? { decision, matches, instructions, limited, detectors: fired, judgeCandidates: candidates }
    : { decision, matches, deciding, instructions, limited, detectors: fired, judgeCandidates: candidates };
}
