/**
 * core/redaction/ — What makes text safe to show: secret masking in linear
 * time, passwords in URLs hidden, and terminal escapes, control and
 * invisible characters shown as escapes. It runs before anything leaves a
 * job (audit, reviewer views, judge input, logs) and knows nothing of jobs,
 * rules or tools.
 *
 * May import: nothing else in core/.
 */

/**
 * Secret masking applied before anything leaves the job: audit events,
 * reviewer views, judge input. Over-masking is preferred to a leak. Masking
 * takes time linear in the text (see secret-patterns.ts); what only needs a
 * summary masks only the start it shows.
 */
import { MASK, secretPasses } from './secret-patterns';

export { MASK };

const SECRET_KEY = /pass(word|wd|phrase)?|secret|token|api[-_]?key|apikey|auth(orization)?|credential|private[-_]?key|cookie|session|signature|sig$/i;

/**
 * Text masked beyond the cut of a summary, so a secret that straddles the
 * cut is still recognised, and masked, as a whole.
 */
export const CUT_MARGIN = 4096;

export function maskString(text: string): string {
  let out = text;
  for (const pass of secretPasses) out = pass(out);
  return out;
}

/** Whether a field's name marks its value as secret (booleans and empty values stay visible). */
export function isSecretField(key: string, value: unknown): boolean {
  return SECRET_KEY.test(key) && value !== null && value !== undefined && typeof value !== 'boolean';
}

/** When set, strings longer than `max` are cut to it before masking; `removed` counts what was cut. */
interface Clip {
  readonly max: number;
  removed: number;
}

function maskTree(value: unknown, clip: Clip | undefined): unknown {
  if (typeof value === 'string') {
    if (clip === undefined || value.length <= clip.max) return maskString(value);
    clip.removed += value.length - clip.max;
    return maskString(value.slice(0, clip.max));
  }
  if (Array.isArray(value)) return value.map((inner) => maskTree(inner, clip));
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) out[key] = isSecretField(key, inner) ? MASK : maskTree(inner, clip);
    return out;
  }
  return value;
}

/** Deep copy with secret-named fields replaced and secret-looking text masked. */
export function maskValue(value: unknown): unknown {
  return maskTree(value, undefined);
}

/** Shortens long text for summaries; the cut is marked. */
export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

/** `truncate(maskString(text), max)`, masking only the start it shows (and the margin). */
export function maskPreview(text: string, max: number): string {
  if (text.length <= max + CUT_MARGIN) return truncate(maskString(text), max);
  return `${maskString(text.slice(0, max + CUT_MARGIN)).slice(0, max)}… (${text.length - max} more characters)`;
}

/** A short, masked, one-line view of a call's arguments for audit and reviewers. */
export function summarizeArgs(args: unknown, max = 300): string {
  const clip: Clip = { max: max + CUT_MARGIN, removed: 0 };
  const json = JSON.stringify(maskTree(args, clip)) ?? '';
  if (clip.removed === 0) return truncate(json, max);
  return `${json.slice(0, max)}… (${Math.max(json.length - max, 0) + clip.removed} more characters)`;
}
