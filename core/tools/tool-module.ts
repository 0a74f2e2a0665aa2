import type { z } from 'zod';
import type { ContentPreview } from './content-preview';
import type { ObservedState } from './observed-state';
import type { CallFacts } from './facts';
import type { ToolOutcome } from './outcome';
import type { Capability, HostFor } from './tool-host';
import type { Reversibility } from './undo';

export type { ToolOutcome } from './outcome';

export const toolCategories = [
  'read',
  'file_change',
  'delete',
  'command_execution',
  'network',
  'external_send',
  'service_control',
  'control',
] as const;
export type ToolCategory = (typeof toolCategories)[number];

export type ToolRisk = 'low' | 'medium' | 'high';

/** Why one target will be refused by the tool, or could not be observed at all. */
export type TargetProblem = { readonly kind: 'refused' | 'unobservable'; readonly reason: string };

/** What `prepare` saw: one state per target (`targets(args)`, same order), and what is wrong with each. */
export interface Prepared {
  readonly observed: ObservedState[];
  readonly problems: ReadonlyArray<TargetProblem | undefined>;
  /** Whether the change can be taken back (tools that can keep one); absent: the card says nothing of undo. */
  readonly undo?: Reversibility;
}

/** Is the approved call still what the reviewer saw? */
export type RevalidateVerdict =
  | { readonly kind: 'ok' }
  /** The target changed (or is another instance now): the call does not run, the model is told why. */
  | { readonly kind: 'changed'; readonly reason: string }
  /** Nothing to do any more (a service healthy again): the call does not run, which is not a failure; the model is told why. */
  | { readonly kind: 'not_needed'; readonly reason: string };

export interface RevalidateCheck<A> {
  readonly args: A;
  /** What the reviewer approved, by target position. */
  readonly approved: readonly ObservedState[];
  /** The targets as the gate observed them just now (with this module's `prepare`). */
  readonly now: Prepared;
  /** The targets of the approved call and of the call about to run (an edit may have replaced one). */
  readonly targetsThen: readonly string[];
  readonly targetsNow: readonly string[];
}

/** "Did my effect happen?", asked by a retried `execute` whose earlier attempt died without recording an outcome. */
export interface Postcondition {
  readonly present: boolean;
  /**
   * The effect leaves nothing to look at (a request sent, a command run):
   * an interrupted call is then reported as `outcome_unknown`, never run a
   * second time because its target looks as it did before.
   */
  readonly undetectable?: boolean;
  /** What the target shows, for the model, `show` and the log. */
  readonly detail: string;
}

/**
 * One tool: what the model, policy and reviewers know of it (pure data the
 * workflow bundle reads), and what the tools worker does with it (hooks
 * written against the capabilities in `needs`, which the gate lends them).
 * Hooks are methods so a module typed with its own schema and needs fits
 * the registry's list.
 */
export interface ToolModule<S extends z.ZodType = z.ZodType, N extends Capability = Capability> {
  /** snake_case: OpenAI function names allow no dots. */
  readonly name: string;
  readonly description: string;
  /** The category listed and gated by rules; `categoryOf` may say more per call. */
  readonly category: ToolCategory;
  readonly risk: ToolRisk;
  /** The arguments; `.describe()` texts reach the model. */
  readonly parameters: S;
  /** Capabilities the tool needs; without all of them configured the tool is not offered, and refused if called. */
  readonly needs: readonly N[];
  /** Arguments naming what the call acts on, in the order the reviewer should see them. */
  readonly targetFields: readonly string[];
  /** The target fields that are paths inside the roots: canonicalized, resolved for policy, checked by `outside_roots`. */
  readonly pathFields: readonly string[];
  /** Arguments a reviewer may ever edit; a rule's `approval.editable` names some of these. */
  readonly editable: readonly string[];
  /** Offered only to a job that names it in its tools, never by default (the model is not given `fs_undo`). */
  readonly askedForOnly?: boolean;

  /** The category of one call, e.g. `external_send` for a POST; default: `category`. */
  categoryOf(args: z.output<S>): ToolCategory;
  /** What the call acts on: the values of `targetFields` (strings, or lists of strings), unless a module says otherwise. */
  targets(args: z.output<S>): string[];
  /** Paths nested below the top level (a list of moves), which `pathFields` cannot name: every path the call acts on, for policy. */
  pathsOf?(args: z.output<S>): string[];
  /** The same arguments with every nested path passed through `map` (canonical spelling); pairs with `pathsOf`. */
  mapPaths?(args: z.output<S>, map: (path: string) => string): z.output<S>;
  /** What policy may know before deciding, resolved on the tools side; default: facts of the path targets. */
  facts?(host: HostFor<N>, args: z.output<S>): Promise<CallFacts>;
  /** The targets as they are now, for the reviewer and for the precondition. */
  prepare(host: HostFor<N>, args: z.output<S>): Promise<Prepared>;
  /** What the call would change, for the reviewer, from the targets `prepare` saw; asked only when a call parks. */
  preview?(host: HostFor<N>, args: z.output<S>, observed: readonly ObservedState[]): Promise<ContentPreview | undefined>;
  /** Default: any difference between `approved` and `now` (position by position, `describeChanges`) is `changed`. */
  revalidate?(host: HostFor<N>, check: RevalidateCheck<z.output<S>>): RevalidateVerdict | Promise<RevalidateVerdict>;
  /** Runs the call; `before` is what it was checked against right before (absent for reads). Throw `ToolRefusal` to refuse. */
  execute(host: HostFor<N>, args: z.output<S>, before: readonly ObservedState[] | undefined): Promise<ToolOutcome>;
  /** Default: no postcondition (`present: false`), so an interrupted call is settled only by the target being unchanged. */
  postcondition?(host: HostFor<N>, args: z.output<S>, before: readonly ObservedState[] | undefined): Promise<Postcondition>;
}

/** A module as the registry holds it: schema and needs erased. */
export type AnyTool = ToolModule<z.ZodType, Capability>;

type Declared<S extends z.ZodType, N extends Capability> = Omit<ToolModule<S, N>, 'categoryOf' | 'targets' | 'editable' | 'pathFields' | 'needs'> &
  Partial<Pick<ToolModule<S, N>, 'categoryOf' | 'targets' | 'editable' | 'pathFields'>> & { readonly needs: readonly N[] };

/** Top-level argument names of an object schema. */
function shapeKeys(schema: z.ZodType): string[] {
  const shape = (schema as unknown as { shape?: Record<string, unknown> }).shape;
  return shape === undefined ? [] : Object.keys(shape);
}

function valuesOf(args: unknown, fields: readonly string[]): string[] {
  if (typeof args !== 'object' || args === null) return [];
  return fields.flatMap((field) => {
    const value: unknown = Reflect.get(args, field);
    if (typeof value === 'string') return [value];
    return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
  });
}

/**
 * Declares a tool module with the defaults filled in: `targets` from
 * `targetFields`, no path fields, every argument editable, one category.
 */
export function defineTool<S extends z.ZodType, N extends Capability = never>(declared: Declared<S, N>): ToolModule<S, N> {
  const category = declared.category;
  const targetFields = declared.targetFields;
  return {
    pathFields: [],
    editable: shapeKeys(declared.parameters),
    categoryOf: () => category,
    targets: (args) => valuesOf(args, targetFields),
    ...declared,
  };
}

/** The path arguments of a call (what policy resolves and `outside_roots` checks). */
export function pathTargets(tool: AnyTool, args: unknown): string[] {
  if (tool.pathsOf !== undefined) {
    const parsed = tool.parameters.safeParse(args);
    return parsed.success ? tool.pathsOf(parsed.data) : [];
  }
  return valuesOf(args, tool.pathFields);
}
