import { z } from 'zod';
import { maskString } from '../redaction/masking';
import { lineDiff } from '../util/line-diff';

/**
 * What a write would change in a file's content, seen by the tools side
 * when the call parks (only it can read the file) and carried in the
 * request for every surface that shows the card. Masked here, each side as
 * a whole document before the diff: a secret shows as masked whichever of
 * its lines fall in the diff's context (a key's last lines without its
 * BEGIN line are still the key), nothing unmasked from the file reaches the
 * job's history, and a mask the new text opens cannot hide lines of the
 * old one. Bounded: a reviewer reads a few dozen lines, and the request
 * travels in the job's history.
 */

/** Files larger than this are not read for a diff. */
export const PREVIEW_READ_LIMIT = 512 * 1024;
/** Lines of diff kept (hunk headers included). */
export const PREVIEW_MAX_LINES = 80;
/** Characters kept of one line. */
export const PREVIEW_MAX_LINE_CHARS = 240;

export const contentPreviewSchema = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('text'),
    path: z.string(),
    /** Unified diff lines, each cut at `PREVIEW_MAX_LINE_CHARS`. */
    lines: z.array(z.string()).max(PREVIEW_MAX_LINES),
    added: z.number().int(),
    removed: z.number().int(),
    /** Diff lines not kept. */
    omitted: z.number().int(),
  }),
  z.strictObject({ kind: z.literal('binary'), path: z.string(), beforeBytes: z.number().nullable(), afterBytes: z.number() }),
  /** No diff, and why: "too large to compare (3 MiB)", "too different to show line by line". */
  z.strictObject({ kind: z.literal('unavailable'), path: z.string(), why: z.string() }),
]);
export type ContentPreview = z.infer<typeof contentPreviewSchema>;

const cut = (line: string) => (line.length > PREVIEW_MAX_LINE_CHARS ? `${line.slice(0, PREVIEW_MAX_LINE_CHARS)}…` : line);

/** Whether text read from a file is text a reviewer can read as lines (no NUL, valid UTF-8 as decoded). */
export function looksLikeText(text: string): boolean {
  return !text.includes('\0') && !text.includes('\uFFFD');
}

/** The preview of `before` (null: no file) becoming `after`, each masked as a whole. */
export function textPreview(path: string, before: string | null, after: string): ContentPreview {
  const diff = lineDiff(maskString(before ?? ''), maskString(after), { context: 3, maxLines: PREVIEW_MAX_LINES });
  if (diff.kind === 'tooDifferent') {
    return { kind: 'unavailable', path: maskString(path), why: `too different to show line by line (${diff.beforeLines} lines → ${diff.afterLines} lines)` };
  }
  return { kind: 'text', path: maskString(path), lines: diff.lines.map(cut), added: diff.added, removed: diff.removed, omitted: diff.omitted };
}
