import { globToRegExp } from '../glob';
import type { DetectorName } from './detectors';
import type { Condition, Predicate } from './rules';

const regexCache = new Map<string, RegExp>();

function cached(key: string, make: () => RegExp): RegExp {
  let re = regexCache.get(key);
  if (re === undefined) {
    re = make();
    if (regexCache.size > 1000) regexCache.clear();
    regexCache.set(key, re);
  }
  return re;
}

/** Reads `a.b.c` from the call's arguments; undefined when any step is missing. */
export function argAt(args: unknown, path: string): unknown {
  let current: unknown = args;
  for (const part of path.split('.')) {
    if (current === null || typeof current !== 'object' || Array.isArray(current)) return undefined;
    if (!Object.prototype.hasOwnProperty.call(current, part)) return undefined;
    current = (current as Record<string, unknown>)[part];
  }
  return current;
}

function predicateMatches(p: Predicate, args: unknown): boolean {
  const value = argAt(args, p.arg);
  if (p.exists !== undefined) return (value !== undefined) === p.exists;
  if (value === undefined) return false;
  if (p.equals !== undefined) return value === p.equals;
  if (p.in !== undefined) return p.in.some((candidate) => candidate === value);
  if (p.glob !== undefined) {
    const glob = p.glob;
    return typeof value === 'string' && cached(`g:${glob}`, () => globToRegExp(glob)).test(value);
  }
  if (p.regex !== undefined) {
    const regex = p.regex;
    return typeof value === 'string' && cached(`r:${regex}`, () => new RegExp(regex, 'u')).test(value);
  }
  if (typeof value !== 'number') return false;
  if (p.lt !== undefined) return value < p.lt;
  if (p.lte !== undefined) return value <= p.lte;
  if (p.gt !== undefined) return value > p.gt;
  if (p.gte !== undefined) return value >= p.gte;
  return false;
}

/** Answers a `{ detector }` condition; without one, detector conditions never match. */
export type DetectorProbe = (name: DetectorName) => boolean;

export function conditionMatches(condition: Condition, args: unknown, detect?: DetectorProbe): boolean {
  if ('all' in condition) return condition.all.every((c) => conditionMatches(c, args, detect));
  if ('any' in condition) return condition.any.some((c) => conditionMatches(c, args, detect));
  if ('not' in condition) return !conditionMatches(condition.not, args, detect);
  if ('detector' in condition) return detect?.(condition.detector) ?? false;
  return predicateMatches(condition, args);
}

function mentions(condition: Condition, names: ReadonlySet<string>): boolean {
  if ('all' in condition) return condition.all.some((c) => mentions(c, names));
  if ('any' in condition) return condition.any.some((c) => mentions(c, names));
  if ('not' in condition) return mentions(condition.not, names);
  return 'detector' in condition && names.has(condition.detector);
}

/** Whether any of these rules' conditions use one of the named detectors. */
export function rulesUseDetectors(rules: ReadonlyArray<{ when?: Condition | undefined }>, names: readonly DetectorName[]): boolean {
  const set = new Set<string>(names);
  return rules.some((r) => r.when !== undefined && mentions(r.when, set));
}
