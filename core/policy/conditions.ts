import { globToRegExp } from '../util/glob';
import { patternRegExp } from '../util/linear-regex';
import type { DetectorName } from './detectors';
import { globLiteral } from './glob-literal';
import type { Condition, Predicate } from './rules';

/** What one glob needs at evaluation; the pattern is made when a string first meets it. */
interface GlobMatcher {
  readonly literal: string;
  re: RegExp | undefined;
}

type Reader = (args: unknown) => unknown;

// Shared by text across snapshots, so compiling a copy of the rules does no pattern work twice.
// eslint-disable-next-line airlock/no-module-state -- compiled matchers, keyed by the pattern they compile: the same for every job
const globCache = new Map<string, GlobMatcher>();
// eslint-disable-next-line airlock/no-module-state -- as above; compiled without g or y, so a match keeps no position
const regexCache = new Map<string, RegExp>();
// eslint-disable-next-line airlock/no-module-state -- as above, keyed by the path they read
const readerCache = new Map<string, Reader>();

function cached<T>(cache: Map<string, T>, key: string, make: () => T): T {
  let value = cache.get(key);
  if (value === undefined) {
    value = make();
    if (cache.size > 1000) cache.clear();
    cache.set(key, value);
  }
  return value;
}

function ownValue(value: unknown, key: string): unknown {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return undefined;
  if (!Object.prototype.hasOwnProperty.call(value, key)) return undefined;
  const found: unknown = Reflect.get(value, key);
  return found;
}

/** Reads `a.b.c` from the call's arguments; undefined when any step is missing. */
export function argAt(args: unknown, path: string): unknown {
  return reader(path)(args);
}

function reader(path: string): Reader {
  return cached(readerCache, path, () => {
    const parts = path.split('.');
    const [first] = parts;
    if (parts.length === 1 && first !== undefined) return (args) => ownValue(args, first);
    return (args) => {
      let current = args;
      for (const part of parts) {
        current = ownValue(current, part);
        if (current === undefined) return undefined;
      }
      return current;
    };
  });
}

/** Answers a `{ detector }` condition; without one, detector conditions never match. */
export type DetectorProbe = (name: DetectorName) => boolean;

/** A condition turned into a function once, so a call meets no shape checks and no pattern lookups. */
export type CompiledCondition = (args: unknown, detect: DetectorProbe | undefined) => boolean;

function compilePredicate(p: Predicate): CompiledCondition {
  const read = reader(p.arg);
  // The first operator present decides, in this order; a valid predicate has exactly one.
  if (p.exists !== undefined) {
    const exists = p.exists;
    return (args) => (read(args) !== undefined) === exists;
  }
  if (p.equals !== undefined) {
    const equals = p.equals;
    return (args) => read(args) === equals;
  }
  if (p.in !== undefined) {
    const list = p.in;
    return (args) => {
      const value = read(args);
      if (value === undefined) return false;
      for (const candidate of list) if (candidate === value) return true;
      return false;
    };
  }
  if (p.glob !== undefined) {
    const glob = p.glob;
    const matcher = cached(globCache, glob, (): GlobMatcher => ({ literal: globLiteral(glob), re: undefined }));
    return (args) => {
      const value = read(args);
      if (typeof value !== 'string') return false;
      // Made on first use, as before: a pattern is only ever compiled when a string meets it.
      matcher.re ??= globToRegExp(glob);
      // Most values miss a rule's pattern; a substring search says so faster than the pattern.
      return value.includes(matcher.literal) && matcher.re.test(value);
    };
  }
  if (p.regex !== undefined) {
    const regex = p.regex;
    let re: RegExp | undefined;
    return (args) => {
      const value = read(args);
      if (typeof value !== 'string') return false;
      re ??= cached(regexCache, regex, () => patternRegExp(regex));
      return re.test(value);
    };
  }
  const { lt, lte, gt, gte } = p;
  if (lt !== undefined) return (args) => numberAt(read, args, (n) => n < lt);
  if (lte !== undefined) return (args) => numberAt(read, args, (n) => n <= lte);
  if (gt !== undefined) return (args) => numberAt(read, args, (n) => n > gt);
  if (gte !== undefined) return (args) => numberAt(read, args, (n) => n >= gte);
  return () => false;
}

function numberAt(read: (args: unknown) => unknown, args: unknown, test: (n: number) => boolean): boolean {
  const value = read(args);
  return typeof value === 'number' && test(value);
}

export function compileCondition(condition: Condition): CompiledCondition {
  if ('arg' in condition) return compilePredicate(condition);
  if ('detector' in condition) {
    const name = condition.detector;
    return (_args, detect) => detect?.(name) ?? false;
  }
  if ('all' in condition) {
    const parts = condition.all.map(compileCondition);
    return (args, detect) => {
      for (const part of parts) if (!part(args, detect)) return false;
      return true;
    };
  }
  if ('any' in condition) {
    const parts = condition.any.map(compileCondition);
    return (args, detect) => {
      for (const part of parts) if (part(args, detect)) return true;
      return false;
    };
  }
  const inner = compileCondition(condition.not);
  return (args, detect) => !inner(args, detect);
}

export function conditionMatches(condition: Condition, args: unknown, detect?: DetectorProbe): boolean {
  return compileCondition(condition)(args, detect);
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
