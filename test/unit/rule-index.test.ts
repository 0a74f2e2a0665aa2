import { parseDuration } from '../../core/util/duration';
import { globToRegExp } from '../../core/util/glob';
import { isInside, normalizePosix, resolvePosix } from '../../core/util/posix-path';
import { candidateRules, evaluateCall, needsFacts, type EvaluateOptions } from '../../core/policy/evaluate';
import { type CallContext, type CallEvaluation, type GateDecision, type JudgeCandidate, type JudgeVerdict, type RuleCounters, type RuleMatch } from '../../core/policy/call-evaluation';
import { detect, detectorNames, replacedTarget, type DetectorInput, type DetectorName } from '../../core/policy/detectors';
import { isNormalAbsolute } from '../../core/policy/command-words';
import { factOf, type TargetFact } from '../../core/tools/facts';
import { globLiteral } from '../../core/policy/glob-literal';
import {
  hookPoints,
  judgedActions,
  ruleActions,
  rulesFileSchema,
  type Condition,
  type HookPoint,
  type Predicate,
  type Rule,
  type RuleAction,
  type RuleInput,
} from '../../core/policy/rules';
import { buildSnapshot, type PolicySnapshot } from '../../core/policy/snapshot';
import { getTool, toolCategories, toolDefinitions, type ToolCategory } from '../../core/tools/registry';

/*
 * The straightforward evaluation the index replaced, kept here as the
 * reference: every enabled rule is tried for every call, conditions are
 * interpreted, views are spread copies, and `outside_roots` resolves each
 * target once per root. Copied from the code before the index.
 */

const referenceRegexes = new Map<string, RegExp>();

function referenceRegex(key: string, make: () => RegExp): RegExp {
  let re = referenceRegexes.get(key);
  if (re === undefined) {
    re = make();
    referenceRegexes.set(key, re);
  }
  return re;
}

function referenceArgAt(args: unknown, path: string): unknown {
  let current: unknown = args;
  for (const part of path.split('.')) {
    if (current === null || typeof current !== 'object' || Array.isArray(current)) return undefined;
    if (!Object.prototype.hasOwnProperty.call(current, part)) return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current;
}

function referencePredicate(p: Predicate, args: unknown): boolean {
  const value = referenceArgAt(args, p.arg);
  if (p.exists !== undefined) return (value !== undefined) === p.exists;
  if (value === undefined) return false;
  if (p.equals !== undefined) return value === p.equals;
  if (p.in !== undefined) return p.in.some((candidate) => candidate === value);
  if (p.glob !== undefined) {
    const glob = p.glob;
    return typeof value === 'string' && referenceRegex(`g:${glob}`, () => globToRegExp(glob)).test(value);
  }
  if (p.regex !== undefined) {
    const regex = p.regex;
    return typeof value === 'string' && referenceRegex(`r:${regex}`, () => new RegExp(regex, 'u')).test(value);
  }
  if (typeof value !== 'number') return false;
  if (p.lt !== undefined) return value < p.lt;
  if (p.lte !== undefined) return value <= p.lte;
  if (p.gt !== undefined) return value > p.gt;
  if (p.gte !== undefined) return value >= p.gte;
  return false;
}

function referenceCondition(condition: Condition, args: unknown, probe: (name: DetectorName) => boolean): boolean {
  if ('all' in condition) return condition.all.every((c) => referenceCondition(c, args, probe));
  if ('any' in condition) return condition.any.some((c) => referenceCondition(c, args, probe));
  if ('not' in condition) return !referenceCondition(condition.not, args, probe);
  if ('detector' in condition) return probe(condition.detector);
  return referencePredicate(condition, args);
}

function referenceDetect(name: DetectorName, input: DetectorInput): boolean {
  if (name !== 'outside_roots') return detect(name, input);
  const { targets, settings } = input;
  if (settings.roots.length === 0) return false;
  const first = settings.roots[0]!;
  return targets.some((t) => !settings.roots.some((root) => isInside(root, resolvePosix(first, t))));
}

function referenceInScope(rule: Rule, point: HookPoint, ctx: CallContext): boolean {
  if (rule.point !== point) return false;
  const s = rule.scope;
  if (s.tools !== undefined && !s.tools.includes(ctx.toolName)) return false;
  if (s.categories !== undefined && !s.categories.includes(ctx.category)) return false;
  if (s.piece !== undefined && (ctx.scope.piece === undefined || !s.piece.includes(ctx.scope.piece))) return false;
  if (s.movement !== undefined && (ctx.scope.movement === undefined || !s.movement.includes(ctx.scope.movement))) return false;
  return true;
}

function referenceCandidates(snapshot: PolicySnapshot, point: HookPoint, ctx: CallContext): Rule[] {
  return snapshot.rules.filter((rule) => rule.enabled && referenceInScope(rule, point, ctx));
}

function referenceViews(ctx: CallContext): unknown[] {
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

const referencePriority: Record<GateDecision, number> = { stop: 5, deny: 4, require_approval: 3, redirect: 2, audit_only: 1, allow: 0 };
const referenceDecision: Record<RuleAction, GateDecision> = {
  inject_instruction: 'redirect',
  deny_current_tool: 'deny',
  request_approval: 'require_approval',
  stop_task: 'stop',
  audit_only: 'audit_only',
  notify_admin: 'audit_only',
};

function referenceLimited(rule: Rule, counters: RuleCounters, now: number): boolean {
  const seen = counters[rule.id];
  if (seen === undefined || rule.limits === undefined) return false;
  if (rule.limits.maxFires !== undefined && seen.fires >= rule.limits.maxFires) return true;
  if (rule.limits.cooldown !== undefined && now - seen.lastFiredAt < (parseDuration(rule.limits.cooldown) ?? 0)) return true;
  return false;
}

function referenceEvaluate(
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
  const probed = new Map<DetectorName, boolean>();
  const probe = (name: DetectorName): boolean => {
    let result = probed.get(name);
    if (result === undefined) {
      result = referenceDetect(name, {
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
  const views = referenceViews(ctx);
  for (const rule of referenceCandidates(snapshot, point, ctx)) {
    const when = rule.when;
    if (when !== undefined && !views.some((view) => referenceCondition(when, view, probe))) continue;
    const base: RuleMatch = {
      ruleId: rule.id,
      ruleVersion: rule.version,
      action: rule.action,
      decision: referenceDecision[rule.action],
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
      const s = rule.scope;
      const narrows = rule.when !== undefined || s.tools !== undefined || s.categories !== undefined || s.piece !== undefined || s.movement !== undefined;
      if (verdict === 'match') match = { ...base, judged: true, shadow: !enforced };
      else if (enforced && rule.action === 'request_approval' && narrows && verdict !== 'no_match') {
        match = { ...base, judged: true, fallback: true };
      } else continue;
    }
    const seen = counters[rule.id];
    const observational = rule.action === 'audit_only' || rule.action === 'notify_admin';
    if (observational && ctx.fingerprint !== undefined && seen?.lastFingerprint === ctx.fingerprint) {
      matches.push({ ...match, duplicate: true });
      continue;
    }
    if (!match.shadow && referenceLimited(rule, counters, now)) {
      limited.push(rule.id);
      continue;
    }
    matches.push(match);
    if (!match.shadow) acting.push({ match, rule });
  }
  let decision: GateDecision = 'allow';
  for (const { match } of acting) if (referencePriority[match.decision] > referencePriority[decision]) decision = match.decision;
  const deciding = acting.find((a) => a.match.decision === decision)?.match;
  const instructions: string[] = [];
  const ordered = [...acting].sort((a, b) => referencePriority[b.match.decision] - referencePriority[a.match.decision]);
  for (const { rule } of ordered) {
    if (rule.instruction !== undefined && !instructions.includes(rule.instruction)) instructions.push(rule.instruction);
  }
  return {
    decision,
    matches,
    ...(deciding !== undefined ? { deciding } : {}),
    instructions,
    limited,
    detectors: detectorNames.filter((name) => probed.get(name) === true),
    judgeCandidates: candidates,
  };
}

function referenceNeedsFacts(snapshot: PolicySnapshot, point: HookPoint, ctx: CallContext): boolean {
  const pathArgs = new Set(['path', ...(getTool(ctx.toolName)?.pathFields ?? [])]);
  const ambiguous = replacedTarget(ctx.toolName, ctx.args) !== undefined;
  const needs = (c: Condition): boolean => {
    if ('all' in c) return c.all.some(needs);
    if ('any' in c) return c.any.some(needs);
    if ('not' in c) return needs(c.not);
    if ('detector' in c) {
      return (
        c.detector === 'symlink_path' ||
        c.detector === 'mode_widening' ||
        c.detector === 'hard_link' ||
        (c.detector === 'destroys_data' && ambiguous) ||
        (c.detector === 'denied_command' && ctx.category === 'command_execution')
      );
    }
    return pathArgs.has(c.arg);
  };
  return referenceCandidates(snapshot, point, ctx).some((rule) => rule.when !== undefined && needs(rule.when));
}

/* Random rule sets and calls, from a seeded generator: a failure names its seed. */

type Random = () => number;

function seeded(seed: number): Random {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(r: Random, items: readonly T[]): T => items[Math.floor(r() * items.length)]!;
const chance = (r: Random, p: number): boolean => r() < p;
const some = <T>(r: Random, items: readonly T[], max: number): T[] => Array.from({ length: 1 + Math.floor(r() * max) }, () => pick(r, items));

const toolNames = [...toolDefinitions.keys()];
const segments = ['srv', 'media', 'backup', 'secrets', 'a', 'b.conf', 'c.tmp', '日本語', 'x.yaml', '..', '.', ''];
const globTokens = ['**/', '**', '*', '?', 'srv/', '/srv/', 'media', 'secrets', '{conf,tmp}', '{,/**}', '[ab]', '[!a]', '.conf', 'x', '/', '.', '日本語', ','];
const regexes = ['^/srv/', 'media', '\\.conf$', '^/srv/(media|backup)/', 'secrets', '^[a-z]+$', '^0?6[0-7]{2}$', '7$', '日本', '^$'];
const values = [true, false, '640', '777', '/srv/media/a', 'overwrite', 0, 10, null];
const argNames = ['path', 'from', 'to', 'recursive', 'mode', 'overwrite', 'maxBytes', 'content', 'options.mode', 'options', 'summary', 'nope'];

function randomPath(r: Random): string {
  const parts = some(r, segments, 5);
  const joined = parts.join('/');
  return chance(r, 0.8) ? `/${joined}` : joined === '' ? 'a' : joined;
}

function randomGlob(r: Random): string {
  for (;;) {
    const glob = some(r, globTokens, 4).join('');
    try {
      globToRegExp(glob);
      return glob;
    } catch {
      // Unbalanced: try again.
    }
  }
}

function randomCondition(r: Random, depth: number): Condition {
  const kind = depth <= 0 ? pick(r, ['predicate', 'predicate', 'detector'] as const) : pick(r, ['predicate', 'predicate', 'detector', 'all', 'any', 'not'] as const);
  switch (kind) {
    case 'detector':
      return { detector: pick(r, detectorNames) };
    case 'all':
      return { all: Array.from({ length: 1 + Math.floor(r() * 3) }, () => randomCondition(r, depth - 1)) };
    case 'any':
      return { any: Array.from({ length: 1 + Math.floor(r() * 3) }, () => randomCondition(r, depth - 1)) };
    case 'not':
      return { not: randomCondition(r, depth - 1) };
    case 'predicate': {
      const arg = pick(r, argNames);
      switch (pick(r, ['equals', 'in', 'glob', 'glob', 'regex', 'lt', 'lte', 'gt', 'gte', 'exists'] as const)) {
        case 'equals':
          return { arg, equals: pick(r, values) };
        case 'in':
          return { arg, in: some(r, values, 3) };
        case 'glob':
          return { arg, glob: randomGlob(r) };
        case 'regex':
          return { arg, regex: pick(r, regexes) };
        case 'lt':
          return { arg, lt: pick(r, [0, 10, 65_536]) };
        case 'lte':
          return { arg, lte: pick(r, [0, 10, 65_536]) };
        case 'gt':
          return { arg, gt: pick(r, [0, 10, 65_536]) };
        case 'gte':
          return { arg, gte: pick(r, [0, 10, 65_536]) };
        case 'exists':
          return { arg, exists: chance(r, 0.5) };
      }
    }
  }
}

const completionActions: readonly RuleAction[] = ['inject_instruction', 'deny_current_tool', 'audit_only', 'notify_admin'];
const limitable: readonly RuleAction[] = ['inject_instruction', 'audit_only', 'notify_admin'];

function randomRule(r: Random, i: number): RuleInput {
  const point: HookPoint = chance(r, 0.15) ? 'completion.before_accept' : 'tool.before';
  const judged = point === 'tool.before' && chance(r, 0.15);
  const enforceJudge = judged && chance(r, 0.5);
  const action = pick(r, point === 'completion.before_accept' ? completionActions : enforceJudge ? judgedActions : ruleActions);
  const scope: NonNullable<RuleInput['scope']> = {};
  if (chance(r, 0.5)) scope.tools = some(r, toolNames, 3);
  if (chance(r, 0.35)) scope.categories = some(r, toolCategories, 2);
  if (chance(r, 0.1)) scope.piece = some(r, ['p1', 'p2'], 2);
  if (chance(r, 0.1)) scope.movement = some(r, ['m1', 'm2'], 2);
  return {
    id: `r${i}`,
    version: 1 + Math.floor(r() * 3),
    enabled: chance(r, 0.9),
    name: `rule ${i}`,
    point,
    scope,
    ...(chance(r, 0.75) ? { when: randomCondition(r, 3) } : {}),
    ...(judged ? { condition: 'removes something irreplaceable', enforceJudge } : {}),
    action,
    ...(action === 'inject_instruction' || chance(r, 0.4) ? { instruction: pick(r, ['Look first.', 'Back it up.', 'Never the root.']) } : {}),
    ...(limitable.includes(action) && chance(r, 0.3)
      ? { limits: chance(r, 0.5) ? { maxFires: 1 + Math.floor(r() * 2) } : { cooldown: pick(r, ['30s', '10m', '1h']) } }
      : {}),
    shadow: chance(r, 0.15),
  };
}

function randomArgs(r: Random, toolName: string): Record<string, unknown> {
  const path = (): unknown => (chance(r, 0.95) ? randomPath(r) : 42);
  const extra = chance(r, 0.2) ? { options: { mode: pick(r, ['640', '777']) } } : {};
  switch (toolName) {
    case 'fs_read':
      return { path: path(), maxBytes: pick(r, [10, 65_536]), ...extra };
    case 'fs_write':
      return { path: path(), content: 'x', mode: pick(r, ['create', 'overwrite', 'append']), ...extra };
    case 'fs_move':
      return { from: path(), to: path(), overwrite: chance(r, 0.5), ...extra };
    case 'fs_delete':
      return { path: path(), recursive: chance(r, 0.5), ...extra };
    case 'fs_chmod':
      return { path: path(), mode: pick(r, ['640', '777', '0644', '666', '600']), ...extra };
    case 'complete':
      return { summary: pick(r, ['done', '/srv/media/a']) };
    default:
      return chance(r, 0.9) ? { path: path(), ...extra } : {};
  }
}

function randomCall(r: Random): CallContext {
  const toolName = pick(r, toolNames);
  const tool = getTool(toolName)!;
  const category: ToolCategory = chance(r, 0.85) ? tool.category : pick(r, toolCategories);
  const args = randomArgs(r, toolName);
  const targets = tool.pathFields.flatMap((field) => (typeof args[field] === 'string' ? [String(args[field])] : []));
  const facts = chance(r, 0.35)
    ? {
        targets: targets.map(
          (t): TargetFact => ({
            path: t,
            real: pick(r, [t, randomPath(r), null]),
            exists: chance(r, 0.5),
            symlink: chance(r, 0.3),
            ...(chance(r, 0.5) ? { mode: pick(r, ['644', '600', '777']) } : {}),
          }),
        ),
      }
    : undefined;
  const scope = { ...(chance(r, 0.5) ? { piece: pick(r, ['p1', 'p2']) } : {}), ...(chance(r, 0.5) ? { movement: pick(r, ['m1', 'm2']) } : {}) };
  return { toolName, category, args, scope, targets, facts, ...(chance(r, 0.5) ? { fingerprint: pick(r, ['fp1', 'fp2']) } : {}) };
}

function randomCounters(r: Random, rules: readonly RuleInput[]): RuleCounters {
  const counters: RuleCounters = {};
  for (const rule of rules) {
    if (!chance(r, 0.3)) continue;
    counters[rule.id] = {
      fires: Math.floor(r() * 3),
      lastFiredAt: Math.floor(r() * 1_000_000),
      ...(chance(r, 0.6) ? { lastFingerprint: pick(r, ['fp1', 'fp2']) } : {}),
    };
  }
  return counters;
}

function randomOptions(r: Random, rules: readonly RuleInput[]): EvaluateOptions | undefined {
  if (chance(r, 0.5)) return chance(r, 0.5) ? undefined : {};
  const verdicts: Record<string, JudgeVerdict> = {};
  for (const rule of rules) if (chance(r, 0.7)) verdicts[rule.id] = pick(r, ['match', 'no_match', 'unknown', 'failed'] as const);
  return { verdicts };
}

describe('indexed evaluation equals the straightforward one', () => {
  test('on thousands of random rule sets and calls', () => {
    let cases = 0;
    for (let seed = 1; seed <= 400; seed++) {
      const r = seeded(seed);
      const inputs = Array.from({ length: Math.floor(r() * 40) }, (_, i) => randomRule(r, i));
      const file = rulesFileSchema.parse({ version: 1, rules: inputs });
      const built = buildSnapshot(file, 'property', {
        roots: pick(r, [[], ['/srv/media'], ['/srv/media', '/srv/backup'], ['/']]),
        judgeModel: 'none',
        judgeTimeoutMs: 1000,
      });
      // A snapshot may also carry disabled rules, and activities get their own decoded copy of it.
      const snapshot: PolicySnapshot = chance(r, 0.3) ? { ...built, rules: file.rules } : built;
      for (let c = 0; c < 20; c++) {
        const ctx = randomCall(r);
        const point = chance(r, 0.85) ? 'tool.before' : pick(r, hookPoints);
        const counters = randomCounters(r, inputs);
        const now = Math.floor(r() * 2_000_000);
        const options = randomOptions(r, inputs);
        const copy = chance(r, 0.2) ? (JSON.parse(JSON.stringify(snapshot)) as PolicySnapshot) : snapshot;
        const expected = referenceEvaluate(snapshot, point, ctx, counters, now, options);
        const actual = evaluateCall(copy, point, ctx, counters, now, options);
        const where = `seed ${seed}, call ${c}`;
        expect({ where, evaluation: actual }).toEqual({ where, evaluation: expected });
        // Same keys in the same order, nothing undefined: what is recorded in history is byte for byte the same.
        expect({ where, json: JSON.stringify(actual) }).toEqual({ where, json: JSON.stringify(expected) });
        expect({ where, ids: candidateRules(copy, point, ctx).map((rule) => rule.id) }).toEqual({
          where,
          ids: referenceCandidates(snapshot, point, ctx).map((rule) => rule.id),
        });
        expect({ where, needs: needsFacts(copy, point, ctx) }).toEqual({ where, needs: referenceNeedsFacts(snapshot, point, ctx) });
        cases++;
      }
    }
    expect(cases).toBeGreaterThanOrEqual(5000);
  });

  test('on path arguments, seen as written and as the real place behind them', () => {
    for (let seed = 1; seed <= 3000; seed++) {
      const r = seeded(100_000 + seed);
      const toolName = pick(r, ['fs_move', 'fs_move', 'fs_read', 'fs_delete', 'fs_chmod']);
      const args = randomArgs(r, toolName);
      const targets = getTool(toolName)!.pathFields.flatMap((field) => (typeof args[field] === 'string' ? [String(args[field])] : []));
      const reals = targets.map(() => randomPath(r));
      const facts = { targets: targets.map((t, i): TargetFact => ({ path: t, real: chance(r, 0.8) ? reals[i]! : t, exists: true, symlink: false })) };
      const arg = pick(r, ['path', 'from', 'to']);
      const leaf: Condition = pick(r, [
        { arg, equals: pick(r, [...targets, ...reals, '/srv']) },
        { arg, glob: randomGlob(r) },
        { arg, regex: pick(r, regexes) },
      ]);
      const when = chance(r, 0.3) ? { not: leaf } : leaf;
      const snapshot = buildSnapshot(rulesFileSchema.parse({ version: 1, rules: [{ id: 'p', version: 1, name: 'p', when, action: 'deny_current_tool' }] }), 'views');
      const ctx: CallContext = { toolName, category: getTool(toolName)!.category, args, scope: {}, targets, facts };
      const where = `seed ${seed}`;
      expect({ where, evaluation: evaluateCall(snapshot, 'tool.before', ctx, {}, 0) }).toEqual({
        where,
        evaluation: referenceEvaluate(snapshot, 'tool.before', ctx, {}, 0),
      });
    }
  });

  test('candidates keep file order, whatever scopes the rules have', () => {
    const snapshot = buildSnapshot(
      rulesFileSchema.parse({
        version: 1,
        rules: [
          { id: 'by-tool', version: 1, name: 'a', scope: { tools: ['fs_delete', 'fs_delete'] }, action: 'audit_only' },
          { id: 'every-call', version: 1, name: 'b', action: 'audit_only' },
          { id: 'by-category', version: 1, name: 'c', scope: { categories: ['delete'] }, action: 'audit_only' },
          { id: 'tool-and-category', version: 1, name: 'd', scope: { tools: ['fs_delete'], categories: ['read'] }, action: 'audit_only' },
          { id: 'by-movement', version: 1, name: 'e', scope: { tools: ['fs_delete'], movement: ['m1'] }, action: 'audit_only' },
          { id: 'completion', version: 1, name: 'f', point: 'completion.before_accept', action: 'audit_only' },
        ],
      }),
      'order',
    );
    const ctx: CallContext = { toolName: 'fs_delete', category: 'delete', args: { path: '/a' }, scope: { movement: 'm1' } };
    expect(candidateRules(snapshot, 'tool.before', ctx).map((rule) => rule.id)).toEqual(['by-tool', 'every-call', 'by-category', 'by-movement']);
    expect(candidateRules(snapshot, 'tool.before', { ...ctx, scope: {} }).map((rule) => rule.id)).toEqual(['by-tool', 'every-call', 'by-category']);
    expect(candidateRules(snapshot, 'completion.before_accept', ctx).map((rule) => rule.id)).toEqual(['completion']);
  });

  test('a snapshot given another rules list is indexed again', () => {
    const first = buildSnapshot(rulesFileSchema.parse({ version: 1, rules: [{ id: 'a', version: 1, name: 'a', action: 'audit_only' }] }), 'one');
    const ctx: CallContext = { toolName: 'fs_read', category: 'read', args: { path: '/a' }, scope: {} };
    expect(evaluateCall(first, 'tool.before', ctx, {}, 0).matches.map((m) => m.ruleId)).toEqual(['a']);
    first.rules = rulesFileSchema.parse({ version: 1, rules: [{ id: 'b', version: 1, name: 'b', action: 'deny_current_tool' }] }).rules;
    expect(evaluateCall(first, 'tool.before', ctx, {}, 0)).toMatchObject({ decision: 'deny', matches: [{ ruleId: 'b' }] });
  });
});

describe('shortcuts the evaluation takes', () => {
  test('a glob never matches a value without its literal', () => {
    const r = seeded(7);
    let matched = 0;
    for (let i = 0; i < 20_000; i++) {
      const glob = randomGlob(r);
      const value = randomPath(r);
      if (!globToRegExp(glob).test(value)) continue;
      matched++;
      expect({ glob, value, holds: value.includes(globLiteral(glob)) }).toEqual({ glob, value, holds: true });
    }
    expect(matched).toBeGreaterThan(500);
    expect(globLiteral('**/secrets{,/**}')).toBe('secrets');
    expect(globLiteral('/srv/media/**/*.{conf,yaml}')).toBe('/srv/media/');
    expect(globLiteral('**')).toBe('');
  });

  test('a path taken as already normal is one normalizing leaves unchanged', () => {
    const r = seeded(11);
    for (let i = 0; i < 20_000; i++) {
      const path = randomPath(r) + pick(r, ['', '/', '/.', '/..']);
      const normal = path.startsWith('/') && normalizePosix(path) === path;
      expect({ path, normal: isNormalAbsolute(path) }).toEqual({ path, normal });
    }
  });
});
