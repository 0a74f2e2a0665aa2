import { z } from 'zod';
import type { JobScope } from '../policy/rules';
import { canonicalJson } from '../util/canonical-json';
import { formatDuration } from '../util/duration';
import { sha256Hex } from '../util/sha256';
import { isFileState, type ObservedState } from '../tools/observed-state';
import { getTool } from '../tools/registry';

/**
 * Standing approvals: a reviewer's "yes, and the same again" for one exact
 * operation. What a standing approval covers is never wider than the call
 * the reviewer saw: the same tool, the same real targets, the same
 * requester, the same arguments (but for the fields every gating rule
 * names as free), under the same rules at the same versions, until a time
 * and for a number of uses that the reviewer signed and the rules bound.
 */

/** What the gating rules allow a standing approval of a request to be: the tightest of them all. */
export const standingSettingsSchema = z.strictObject({
  maxForMs: z.number().int().positive(),
  maxUses: z.number().int().positive(),
  /** Argument fields that may differ between uses (every gating rule names them). */
  varies: z.array(z.string()),
  /** Every rule that gates the call, at its version: a use is under exactly these. */
  rules: z.array(z.strictObject({ id: z.string(), version: z.number().int() })).min(1),
});
export type StandingSettings = z.infer<typeof standingSettingsSchema>;

/** The requester of a job that names none: shared by all such jobs, so no standing approval is ever kept for it. */
export const UNNAMED_REQUESTER = 'unknown';

/** The most uses a reviewer may sign at once, whatever a rule says. */
export const MAX_STANDING_USES = 10_000;

/** What a reviewer asks for in an approving decision: until when, and how many more calls. Signed with the decision. */
export const standingAskSchema = z.strictObject({
  /** Epoch milliseconds. */
  until: z.number().int().positive(),
  uses: z.number().int().min(1).max(MAX_STANDING_USES),
});
export type StandingAsk = z.infer<typeof standingAskSchema>;

/** Clocks of the reviewer's machine and the worker may differ by this much when `until` is checked against the rule's bound. */
export const STANDING_CLOCK_LEEWAY_MS = 5 * 60_000;

/** On an approved request: it made a standing approval, or it ran under one. */
export const standingMarkSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('granted'), id: z.string(), until: z.number(), uses: z.number() }),
  z.strictObject({
    kind: z.literal('used'),
    id: z.string(),
    /** Which use this was (1 = the first), of `uses`. */
    use: z.number().int(),
    uses: z.number().int(),
    until: z.number(),
  }),
]);
export type StandingMark = z.infer<typeof standingMarkSchema>;

const hex64 = z.string().regex(/^[0-9a-f]{64}$/);

/** What identifies the operation a standing approval covers; compared whole at every use. */
export const standingScopeSchema = z.strictObject({
  toolName: z.string(),
  /** The requester of the job that asked (an MCP agent's job is its own requester). */
  requester: z.string(),
  scope: z.strictObject({ piece: z.string().nullable(), movement: z.string().nullable() }),
  machine: z.string().nullable(),
  /** The real places of the targets, as the tools side observed them: links resolved. */
  targets: z.array(z.string()),
  /** The call's normalized arguments without the free fields. */
  args: z.record(z.string(), z.unknown()),
  varies: z.array(z.string()),
  rules: standingSettingsSchema.shape.rules,
  /** What the card told the reviewer: the rules' reason with the tools side's warnings, and whether the change can be undone. */
  reason: z.string(),
  reversible: z.boolean().nullable(),
});
export type StandingScope = z.infer<typeof standingScopeSchema>;

/**
 * A standing approval as stored. `origin` is the signed decision that
 * made it, kept whole so every use verifies the reviewer's signature
 * again; `scope` is what the job's own request said (never what a client
 * sent), bound to that signature by the origin call's fingerprint.
 */
export const standingRecordSchema = z.strictObject({
  schemaVersion: z.literal(1),
  id: z.string(),
  reviewer: z.string(),
  createdAt: z.number(),
  until: z.number(),
  uses: z.number().int().positive(),
  scope: standingScopeSchema,
  origin: z.strictObject({
    jobId: z.string(),
    requestId: z.string(),
    fingerprint: hex64,
    /** The origin call's full normalized arguments: its fingerprint is recomputed from them at every use. */
    args: z.record(z.string(), z.unknown()),
    ruleId: z.string(),
    ruleVersion: z.number().int(),
    /** The decision payload as signed (signature or passkey assertion included). */
    payload: z.record(z.string(), z.unknown()),
  }),
});
export type StandingRecord = z.infer<typeof standingRecordSchema>;

/** A standing approval with what became of it: uses taken, and whether it was revoked. */
export interface StandingView {
  readonly record: StandingRecord;
  readonly used: number;
  readonly revoked: { readonly at: number; readonly by: string; readonly reason: string } | null;
}

/** How one use was taken, or why none could be. */
export type StandingUse =
  | { readonly ok: true; readonly use: number; readonly left: number }
  | { readonly ok: false; readonly why: 'revoked' | 'expired' | 'used_up' | 'unknown' };

/** A standing approval's id: the request that made it names it, so a retried store write finds the same row. */
export function standingId(jobId: string, requestId: string): string {
  return `S-${sha256Hex(canonicalJson({ purpose: 'airlock-standing', jobId, requestId })).slice(0, 16)}`;
}

/** A target as a standing approval names it: by the real place the tools side saw, on its machine. */
export function targetPlace(state: ObservedState, machine: string | undefined): string {
  const on = machine === undefined ? '' : `${machine}:`;
  if (isFileState(state)) return `${on}file:${state.path}`;
  // A service or other subject is the very instance observed (a container id, a program's inode): another one is another target.
  const pinned = state.identity === null ? '' : `@${state.identity}`;
  return state.kind === 'service' ? `${on}service:${state.service}${pinned}` : `${on}subject:${state.subject}${pinned}`;
}

/**
 * The argument a place stands for: only a tool with one path target,
 * observed as one file state. Every other argument (a command's argv, a
 * bulk move's list, a URL's query) is compared as spelled.
 */
export function placeFieldOf(tool: { readonly targetFields: readonly string[] } | undefined, observed: readonly ObservedState[], targets: number): string | undefined {
  if (tool === undefined || tool.targetFields.length !== 1 || observed.length !== 1 || targets !== 1) return undefined;
  const state = observed[0];
  return state !== undefined && isFileState(state) ? tool.targetFields[0] : undefined;
}

/** The arguments without the free fields (top-level or dotted), for comparing two calls. */
export function fixedArgs(args: Readonly<Record<string, unknown>>, varies: readonly string[]): Record<string, unknown> {
  const copy = JSON.parse(JSON.stringify(args)) as Record<string, unknown>;
  for (const path of varies) {
    const parts = path.split('.');
    let cursor: unknown = copy;
    for (const part of parts.slice(0, -1)) cursor = typeof cursor === 'object' && cursor !== null ? (cursor as Record<string, unknown>)[part] : undefined;
    const last = parts[parts.length - 1];
    if (last !== undefined && typeof cursor === 'object' && cursor !== null) delete (cursor as Record<string, unknown>)[last];
  }
  return copy;
}

/** The scope of a call as a standing approval would cover it. */
export function standingScopeOf(call: {
  readonly toolName: string;
  readonly args: Readonly<Record<string, unknown>>;
  readonly requester: string;
  readonly scope: JobScope;
  readonly machine: string | undefined;
  readonly observed: readonly ObservedState[];
  readonly reason: string;
  readonly undo?: { readonly reversible: boolean } | undefined;
  /** Argument fields the observed places stand for (compared by place, not by spelling: a link to the same file is the same target). */
  readonly placeFields: readonly string[];
  readonly settings: StandingSettings;
}): StandingScope {
  return {
    toolName: call.toolName,
    requester: call.requester,
    scope: { piece: call.scope.piece ?? null, movement: call.scope.movement ?? null },
    machine: call.machine ?? null,
    targets: call.observed.map((o) => targetPlace(o, call.machine)),
    args: fixedArgs(call.args, [...call.settings.varies, ...call.placeFields]),
    varies: [...call.settings.varies].sort(),
    rules: [...call.settings.rules].sort((a, b) => a.id.localeCompare(b.id)),
    reason: call.reason,
    reversible: call.undo?.reversible ?? null,
  };
}

/** Where a call's scope differs from a standing approval's, in words; undefined when it is the same operation. */
export function scopeDifference(covered: StandingScope, call: StandingScope): string | undefined {
  if (covered.toolName !== call.toolName) return `another tool (${call.toolName}, not ${covered.toolName})`;
  if (covered.requester !== call.requester) return `another requester (${call.requester}, not ${covered.requester})`;
  if (canonicalJson(covered.scope) !== canonicalJson(call.scope)) return 'another piece or movement';
  if (covered.machine !== call.machine) return `another machine (${call.machine ?? 'the one'}, not ${covered.machine ?? 'the one'})`;
  if (canonicalJson(covered.rules) !== canonicalJson(call.rules)) return 'other rules or rule versions gate it now';
  if (canonicalJson(covered.varies) !== canonicalJson(call.varies)) return 'the rules now let other fields vary';
  if (canonicalJson(covered.targets) !== canonicalJson(call.targets)) return 'another target (by its real place)';
  if (canonicalJson(covered.args) !== canonicalJson(call.args)) return 'other arguments';
  if (covered.reversible !== call.reversible) return call.reversible === true ? 'it can be undone now, and could not then' : 'it cannot be undone now, as it could then';
  if (covered.reason !== call.reason) return 'the card would say something else now (its reason or a warning differs)';
  return undefined;
}

/** The merged bound of the gating rules, or undefined when any of them allows no standing approval. */
export function mergeStanding(
  rules: ReadonlyArray<{ readonly id: string; readonly version: number; readonly standing: { readonly maxForMs: number; readonly maxUses: number; readonly varies: readonly string[] } | undefined }>,
): StandingSettings | undefined {
  if (rules.length === 0) return undefined;
  let maxForMs = Number.POSITIVE_INFINITY;
  let maxUses = MAX_STANDING_USES;
  let varies: string[] | null = null;
  for (const rule of rules) {
    const s = rule.standing;
    if (s === undefined) return undefined;
    maxForMs = Math.min(maxForMs, s.maxForMs);
    maxUses = Math.min(maxUses, s.maxUses);
    varies = varies === null ? [...s.varies] : varies.filter((v) => s.varies.includes(v));
  }
  return { maxForMs, maxUses, varies: varies ?? [], rules: rules.map((r) => ({ id: r.id, version: r.version })) };
}

/** What a reviewer asking for a standing approval may not ask, in words; undefined when the ask is within the rules. */
export function standingAskProblem(settings: StandingSettings | undefined, ask: StandingAsk, now: number): string | undefined {
  if (settings === undefined) return 'the rules gating this call allow no standing approval (a rule allows one with approval.standing)';
  if (ask.until <= now) return 'a standing approval must end in the future';
  if (ask.until - now > settings.maxForMs + STANDING_CLOCK_LEEWAY_MS) return `the rules allow a standing approval for at most ${formatDuration(settings.maxForMs)}`;
  if (ask.uses > settings.maxUses) return `the rules allow a standing approval of at most ${settings.maxUses} uses`;
  return undefined;
}

/** One sentence for the card: what approving with a standing approval would cover. */
export function standingOffer(request: {
  readonly toolName: string;
  readonly requester: string;
  readonly standing?: StandingSettings | undefined;
}): string | undefined {
  const s = request.standing;
  if (s === undefined) return undefined;
  const free = s.varies.length === 0 ? 'the same arguments' : `the same arguments but ${s.varies.join(', ')}`;
  return `A standing approval would also cover later ${request.toolName} calls by ${request.requester} on the same real target(s) with ${free}, under the same rules, for up to ${formatDuration(s.maxForMs)} and ${s.maxUses} uses (approve with --also-for and --uses); nothing else.`;
}

/** A use as the job says it: "ran under standing approval S-… by alice, 4 of 10 left, until 2026-12-14 03:00". */
export function standingUseText(mark: Extract<StandingMark, { kind: 'used' }>, reviewer: string): string {
  const left = mark.uses - mark.use;
  const until = new Date(mark.until).toISOString().slice(0, 16).replace('T', ' ');
  return `ran under standing approval ${mark.id} by ${reviewer}, ${left} of ${mark.uses} left, until ${until} UTC`;
}

/**
 * The scope of a request as a standing approval covers it: its targets by
 * the places observed (when there is one state per target), its other
 * arguments as they are.
 */
export function requestScope(
  request: {
    readonly toolName: string;
    readonly args: Readonly<Record<string, unknown>>;
    readonly requester: string;
    readonly machine?: string | undefined;
    readonly observed: readonly ObservedState[];
    readonly reason: string;
    readonly undo?: { readonly reversible: boolean } | undefined;
  },
  scope: JobScope,
  settings: StandingSettings,
): StandingScope {
  const tool = getTool(request.toolName);
  const parsed = tool?.parameters.safeParse(request.args);
  const place = parsed?.success === true ? placeFieldOf(tool, request.observed, tool?.targets(parsed.data).length ?? 0) : undefined;
  return standingScopeOf({ ...request, machine: request.machine, scope, placeFields: place === undefined ? [] : [place], settings });
}
