import type { CardChange } from '../approval/card';
import type { PendingRequestView } from '../job/job-view';
import { maskString } from '../redaction/masking';
import { isFileState } from '../tools/observed-state';
import { getTool } from '../tools/registry';
import { humanSize, sizeChange } from '../util/human-size';
import { rwx } from './action-sentence';

/**
 * What a call changes, for the card: from the request's preview (a write's
 * diff, made on the tools side when it parked) or from its arguments and
 * observed targets (a mode, the moves of a bulk move, a service's state).
 * Every text in it is masked. Rendered as lines for the terminal and
 * notifications, and as a fenced block for Markdown.
 */

/** Rows of a bulk move kept on the card; the rest are counted. */
export const MOVE_ROWS = 20;

const SERVICE_ACTIONS: Readonly<Record<string, string>> = { service_restart: 'restart', service_stop: 'stop', service_start: 'start' };

type Args = Readonly<Record<string, unknown>>;
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

function fromPreview(preview: NonNullable<PendingRequestView['preview']>): CardChange {
  const path = maskString(preview.path);
  switch (preview.kind) {
    case 'text':
      // Masked where it was made and by the job's view; line by line again here, so this module is safe on its own.
      return { kind: 'diff', path, lines: preview.lines.map(maskString), added: preview.added, removed: preview.removed, omitted: preview.omitted };
    case 'binary':
      return { kind: 'note', path, text: preview.beforeBytes === null ? `binary, ${humanSize(preview.afterBytes)} new` : `binary, ${sizeChange(preview.beforeBytes, preview.afterBytes)}` };
    case 'unavailable':
      return { kind: 'note', path, text: `no diff: ${maskString(preview.why)}` };
  }
}

export function changeOf(request: Pick<PendingRequestView, 'toolName' | 'args' | 'observed' | 'preview'>): CardChange | undefined {
  if (request.preview !== undefined) return fromPreview(request.preview);
  const parsed = getTool(request.toolName)?.parameters.safeParse(request.args);
  if (parsed?.success !== true || typeof parsed.data !== 'object' || parsed.data === null) return undefined;
  const args = parsed.data as Args;
  if (request.toolName === 'fs_chmod') {
    const now = request.observed.find(isFileState);
    return { kind: 'mode', path: maskString(now?.path ?? str(args.path)), before: now?.exists === true ? rwx(now.mode) : null, after: rwx(str(args.mode)) };
  }
  // A bulk move, or its undo (each entry from where the move put it, back to where it was).
  const back = request.toolName === 'fs_undo';
  if ((request.toolName === 'fs_move_many' || back) && Array.isArray(args.moves)) {
    const moves = (args.moves as unknown[]).flatMap((m) => {
      const from: unknown = typeof m === 'object' && m !== null ? Reflect.get(m, 'from') : undefined;
      const to: unknown = typeof m === 'object' && m !== null ? Reflect.get(m, 'to') : undefined;
      if (typeof from !== 'string' || typeof to !== 'string') return [];
      return [back ? { from: to, to: from } : { from, to }];
    });
    const set = request.observed.find((o) => !isFileState(o) && o.kind === 'subject');
    const facts = set !== undefined && !isFileState(set) && set.kind === 'subject' ? set.facts : {};
    const bytes = typeof facts.bytes === 'number' ? `, ${humanSize(facts.bytes)} in total` : '';
    // An undo moves back only what the call moved: said when it moved fewer than it was asked to.
    const count = back && typeof facts.moved === 'number' && facts.moved < moves.length ? `${facts.moved} of ${moves.length}` : `${moves.length}`;
    return {
      kind: 'moves',
      rows: moves.slice(0, MOVE_ROWS).map((m) => ({ from: maskString(m.from), to: maskString(m.to) })),
      more: Math.max(0, moves.length - MOVE_ROWS),
      total: `${count} ${moves.length === 1 ? 'entry' : 'entries'}${bytes}`,
    };
  }
  const action = SERVICE_ACTIONS[request.toolName];
  if (action !== undefined) {
    const s = request.observed.find((o) => !isFileState(o) && o.kind === 'service');
    if (s === undefined || isFileState(s) || s.kind !== 'service') return undefined;
    const facts = Object.entries(s.facts)
      .filter(([, v]) => v !== null && v !== '')
      .slice(0, 4)
      .map(([k, v]) => `${k} ${String(v)}`);
    const now = !s.exists ? 'does not exist' : [s.status, ...(s.health === 'none' || s.health === 'unknown' ? [] : [s.health]), ...facts].join(', ');
    return { kind: 'service', service: maskString(s.service), action, now: maskString(now) };
  }
  return undefined;
}

/** The heading line of a change: what it is, in words. */
export function changeHeading(change: CardChange): string {
  switch (change.kind) {
    case 'diff':
      return change.lines.length === 0
        ? `${change.path}: the content stays the same`
        : `${change.path}: +${change.added} −${change.removed} lines${change.omitted > 0 ? ` (${change.omitted} more diff lines not shown)` : ''}`;
    case 'note':
      return `${change.path}: ${change.text}`;
    case 'mode':
      return `${change.path}: ${change.before ?? '(does not exist now)'} → ${change.after}`;
    case 'moves':
      return `${change.total}${change.more > 0 ? ` (first ${change.rows.length} shown)` : ''}`;
    case 'service':
      return `${change.service} now: ${change.now}; will ${change.action}`;
  }
}

/** The change as plain lines (no indentation, not escaped): heading, then the diff or the moves; `maxBody` caps the lines after the heading. */
export function changeLines(change: CardChange, maxBody = Number.POSITIVE_INFINITY): string[] {
  const body = change.kind === 'diff' ? change.lines : change.kind === 'moves' ? [...change.rows.map((r) => `${r.from} → ${r.to}`), ...(change.more > 0 ? [`… ${change.more} more`] : [])] : [];
  const shown = body.slice(0, maxBody);
  return [changeHeading(change), ...shown, ...(body.length > shown.length ? [`… ${body.length - shown.length} more lines`] : [])];
}
