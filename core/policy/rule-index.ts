import type { ToolCategory } from '../tools/registry';
import { compileCondition, type CompiledCondition } from './conditions';
import type { Condition, HookPoint, JobScope, Rule } from './rules';
import type { PolicySnapshot } from './snapshot';

/**
 * A rule as evaluation meets it. Every entry has the same shape, so the
 * per-call loop reads it cheaply whatever optional fields the rule has.
 */
export interface IndexedRule {
  readonly rule: Rule;
  readonly when: Condition | undefined;
  /** `when`, compiled on first use: most calls meet only some rules, and a snapshot copy may serve one call. */
  compiled: CompiledCondition | undefined;
  /** Scoped to a piece, movement or machine, which only the call (and its job) can tell. */
  readonly jobScoped: boolean;
}

/**
 * A snapshot's rules by hook point, tool name and category. The list for
 * one of these is made the first time a call asks for it, by one pass over
 * the rules, and kept: a snapshot object (an activity gets its own copy)
 * meets only a few tools, so bucketing every rule up front costs more than
 * it saves.
 */
interface RuleIndex {
  /** The list it was built from: a snapshot given another list gets a new index. */
  readonly rules: readonly Rule[];
  /** One entry per rule, by file position, made when the rule is first a candidate. */
  readonly entries: Array<IndexedRule | undefined>;
  readonly lists: Map<HookPoint, Map<string, Map<ToolCategory, readonly IndexedRule[]>>>;
  listCount: number;
}

// Tool names come from calls; past this many lists, a list is made per call instead of kept.
const MAX_LISTS = 512;

const noRules: readonly IndexedRule[] = [];

/** Point, tools and categories: what a call's tool and category alone decide. */
function applies(rule: Rule, point: HookPoint, toolName: string, category: ToolCategory): boolean {
  if (!rule.enabled || rule.point !== point) return false;
  const { tools, categories } = rule.scope;
  if (tools !== undefined && !tools.includes(toolName)) return false;
  if (categories !== undefined && !categories.includes(category)) return false;
  return true;
}

function entryAt(index: RuleIndex, position: number, rule: Rule): IndexedRule {
  let entry = index.entries[position];
  if (entry === undefined) {
    entry = { rule, when: rule.when, compiled: undefined, jobScoped: rule.scope.piece !== undefined || rule.scope.movement !== undefined || rule.scope.machines !== undefined };
    index.entries[position] = entry;
  }
  return entry;
}

/** The rules for one point, tool and category, in file order: conflicts are resolved in it. */
function listFor(index: RuleIndex, point: HookPoint, toolName: string, category: ToolCategory): readonly IndexedRule[] {
  let byTool = index.lists.get(point);
  const known = byTool?.get(toolName)?.get(category);
  if (known !== undefined) return known;
  const list: IndexedRule[] = [];
  index.rules.forEach((rule, position) => {
    if (applies(rule, point, toolName, category)) list.push(entryAt(index, position, rule));
  });
  if (index.listCount >= MAX_LISTS) return list;
  if (byTool === undefined) {
    byTool = new Map();
    index.lists.set(point, byTool);
  }
  let byCategory = byTool.get(toolName);
  if (byCategory === undefined) {
    byCategory = new Map();
    byTool.set(toolName, byCategory);
  }
  byCategory.set(category, list);
  index.listCount++;
  return list;
}

/** The rule's `when` as a function, or undefined when it has none. */
export function compiledWhen(entry: IndexedRule): CompiledCondition | undefined {
  if (entry.when === undefined) return undefined;
  entry.compiled ??= compileCondition(entry.when);
  return entry.compiled;
}

/** Whether the call's job (and machine) is one a piece-, movement- or machine-scoped rule names. */
export function inJobScope(rule: Rule, job: JobScope, machine?: string): boolean {
  const { piece, movement, machines } = rule.scope;
  if (machines !== undefined && (machine === undefined || !machines.includes(machine))) return false;
  if (piece !== undefined && (job.piece === undefined || !piece.includes(job.piece))) return false;
  if (movement !== undefined && (job.movement === undefined || !movement.includes(job.movement))) return false;
  return true;
}

// Snapshots are frozen for a job; the index lives as long as the snapshot object does.
// eslint-disable-next-line airlock/no-module-state -- keyed by a job's own snapshot, holding only what is computed from it
const indexes = new WeakMap<PolicySnapshot, RuleIndex>();

function indexOf(snapshot: PolicySnapshot): RuleIndex {
  const known = indexes.get(snapshot);
  if (known !== undefined && known.rules === snapshot.rules) return known;
  const fresh: RuleIndex = { rules: snapshot.rules, entries: [], lists: new Map(), listCount: 0 };
  indexes.set(snapshot, fresh);
  return fresh;
}

/**
 * The enabled rules of a snapshot that can apply at this point to a call of
 * this tool and category, in file order. Entries with `jobScoped` still
 * need `inJobScope`. The list is shared: read it, do not change it.
 */
export function indexedCandidates(snapshot: PolicySnapshot, point: HookPoint, toolName: string, category: ToolCategory): readonly IndexedRule[] {
  if (snapshot.rules.length === 0) return noRules;
  return listFor(indexOf(snapshot), point, toolName, category);
}
