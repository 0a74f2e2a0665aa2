import { isFileState, type FileState, type ObservedState } from '../tools/observed-state';
import { getTool } from '../tools/registry';
import type { Reversibility } from '../tools/undo';
import { humanSize } from '../util/human-size';

/**
 * The one sentence a card starts with: what will happen, in words, from the
 * tool, its arguments and the target as observed for the reviewer —
 * "Delete old-backup.tar (256 KiB) in airlock-demo — cannot be undone".
 * Texts are the caller's to mask; a tool without its own wording gets
 * "<tool> <target>".
 */

function base(path: string): string {
  const trimmed = path.replace(/\/+$/, '');
  const cut = trimmed.lastIndexOf('/');
  return cut < 0 ? trimmed : trimmed.slice(cut + 1) || '/';
}

function parent(path: string): string {
  const trimmed = path.replace(/\/+$/, '');
  const cut = trimmed.lastIndexOf('/');
  return cut <= 0 ? '/' : base(trimmed.slice(0, cut));
}

/** "old-backup.tar (256 KiB) in airlock-demo" */
function named(path: string, detail?: string): string {
  return `${base(path)}${detail !== undefined ? ` (${detail})` : ''} in ${parent(path)}`;
}

const fileAt = (observed: readonly ObservedState[], path: string): FileState | undefined =>
  observed.filter(isFileState).find((o) => o.path === path) ?? observed.filter(isFileState)[0];

/** What a file or folder is now: "256 KiB", "folder, 9 files, 512 KiB", "does not exist now". */
function sizeOf(o: FileState | undefined): string | undefined {
  if (o === undefined) return undefined;
  if (!o.exists) return 'does not exist now';
  if (o.type === 'directory') {
    const tree = o.tree?.complete === true ? o.tree : undefined;
    if (tree === undefined) return 'folder';
    const files = tree.files !== undefined ? `${tree.files} ${tree.files === 1 ? 'file' : 'files'}, ` : '';
    return `folder, ${files}${humanSize(tree.bytes)}`;
  }
  return humanSize(o.size);
}

const RWX = ['---', '--x', '-w-', '-wx', 'r--', 'r-x', 'rw-', 'rwx'];

/** "640" → "rw-r-----" */
export function rwx(mode: string): string {
  const digits = mode.replace(/^0+(?=[0-7]{3}$)/, '').slice(-3);
  return /^[0-7]{3}$/.test(digits) ? [...digits].map((d) => RWX[Number(d)] ?? '???').join('') : mode;
}

type Args = Readonly<Record<string, unknown>>;

const reversibleFor = (days: number) => `reversible for ${days} ${days === 1 ? 'day' : 'days'} (airlock undo)`;
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

const sentences: Readonly<Record<string, (args: Args, observed: readonly ObservedState[], undo: Reversibility | undefined) => string>> = {
  fs_delete: (a, o, undo) => `Delete ${named(str(a.path), sizeOf(fileAt(o, str(a.path))))} — ${undo?.reversible === true ? reversibleFor(undo.keepDays) : 'cannot be undone'}`,
  fs_write: (a, o, undo) => {
    const now = fileAt(o, str(a.path));
    const bytes = new TextEncoder().encode(str(a.content)).length;
    const reversible = undo?.reversible === true ? ` — ${reversibleFor(undo.keepDays)}` : '';
    if (a.mode === 'append') return `Append ${humanSize(bytes)} to ${named(str(a.path), now?.exists === true ? `${sizeOf(now)} now` : undefined)}${reversible}`;
    if (now?.exists === true) return `Replace ${named(str(a.path), sizeOf(now))} with ${humanSize(bytes)} — ${undo?.reversible === true ? reversibleFor(undo.keepDays) : 'the old content is lost'}`;
    return `Create ${named(str(a.path), humanSize(bytes))}`;
  },
  fs_move: (a, o, undo) => {
    // The destination is the second target observed.
    const replaces = o.filter(isFileState)[1]?.exists === true ? `, replacing the file there` : '';
    return `Move ${named(str(a.from), sizeOf(fileAt(o, str(a.from))))} to ${str(a.to)}${replaces}${undo?.reversible === true ? ` — ${reversibleFor(undo.keepDays)}` : ''}`;
  },
  fs_move_many: (a, _o, undo) => {
    const moves = Array.isArray(a.moves) ? a.moves : [];
    return `Move ${moves.length} ${moves.length === 1 ? 'entry' : 'entries'}${undo?.reversible === true ? ` — ${reversibleFor(undo.keepDays)}` : ''}`;
  },
  fs_chmod: (a, o, undo) => {
    const now = fileAt(o, str(a.path));
    const was = now?.exists === true ? ` (now ${rwx(now.mode)})` : '';
    return `Change the permissions of ${named(str(a.path))} to ${rwx(str(a.mode))}${was}${undo?.reversible === true ? ` — ${reversibleFor(undo.keepDays)}` : ''}`;
  },
  fs_undo: (a, o) =>
    Array.isArray(a.moves)
      ? `Undo call ${str(a.call)} of job ${str(a.job)}: move back what its bulk move of ${a.moves.length} ${a.moves.length === 1 ? 'entry' : 'entries'} moved`
      : typeof a.to === 'string'
      ? `Undo call ${str(a.call)} of job ${str(a.job)}: move ${named(o.filter(isFileState)[1]?.path ?? a.to)} back to ${str(a.path)}`
      : `Undo call ${str(a.call)} of job ${str(a.job)}: put ${named(fileAt(o, str(a.path))?.path ?? str(a.path))} back as it was before that change`,
  service_restart: (a, o) => `Restart service ${str(a.service)}${serviceNow(o)}`,
  service_stop: (a, o) => `Stop service ${str(a.service)}${serviceNow(o)}`,
  service_start: (a, o) => `Start service ${str(a.service)}${serviceNow(o)}`,
  http_request: (a) => `Send ${str(a.method) || 'GET'} ${str(a.url)}`,
  command_run: (a) => `Run ${Array.isArray(a.argv) ? a.argv.map(String).join(' ') : ''}${str(a.cwd) !== '' ? ` in ${str(a.cwd)}` : ''}`,
};

function serviceNow(observed: readonly ObservedState[]): string {
  const s = observed.find((o) => !isFileState(o) && o.kind === 'service');
  if (s === undefined || isFileState(s) || s.kind !== 'service') return '';
  if (!s.exists) return ' (it does not exist now)';
  const health = s.health === 'none' || s.health === 'unknown' ? '' : `, ${s.health}`;
  return ` (${s.status}${health})`;
}

/** The card's first line for a call; `target` is the fallback's wording for a tool without its own. */
export function actionSentence(input: { readonly toolName: string; readonly args: unknown; readonly observed: readonly ObservedState[]; readonly target: string; readonly undo?: Reversibility }): string {
  const tool = getTool(input.toolName);
  const parsed = tool?.parameters.safeParse(input.args);
  const sentence = sentences[input.toolName];
  if (sentence === undefined || parsed?.success !== true || typeof parsed.data !== 'object' || parsed.data === null) return `${input.toolName} ${input.target}`;
  return sentence(parsed.data as Args, input.observed, input.undo);
}
