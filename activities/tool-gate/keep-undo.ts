import type { KeptChange } from '../../core/tools/capabilities/files';
import type { FileState, ObservedState } from '../../core/tools/observed-state';
import { isFileState } from '../../core/tools/observed-state';
import { heldUntil } from '../../core/tools/undo';
import { pathDigest } from '../../host/stores/nonces/store';
import type { HeldEntry, UndoRecord } from '../../host/stores/nonces/undo-records';
import type { JournalCapability } from '../../core/tools/capabilities/journal';
import type { ToolHost } from '../../core/tools/tool-host';
import type { NonceStore } from '../../host/stores/nonces/store';
import type { ExecuteInput } from './messages';
import { classifyEntry, movesDigest, readJournal } from '../../core/tools/fs/move-plan';

/** The entry as it was right before the change, as the record keeps it; undefined for what no change holds (a link, nothing). */
function heldEntryOf(state: FileState): HeldEntry | undefined {
  if (!state.exists || (state.type !== 'file' && state.type !== 'directory')) return undefined;
  const inode = { dev: state.dev, ino: state.ino };
  if (state.type === 'file') return { type: 'file', bytes: state.size, files: null, digest: state.sha256, mode: state.mode, ...inode, mtimeMs: state.mtimeMs, ...(state.links !== undefined ? { links: state.links } : {}) };
  const tree = state.tree?.complete === true ? state.tree : undefined;
  return { type: 'directory', bytes: tree?.bytes ?? 0, files: tree?.files ?? null, digest: tree?.sha256 ?? null, mode: state.mode, ...inode };
}

/** What the record keeps of a change that happened: the entry before, what the change did, and the bytes it set aside. */
type Kept = { readonly held: HeldEntry; readonly change: NonNullable<UndoRecord['change']>; readonly asideBytes: number };

/** A record's content, and the path it names (canonical; kept as its digest). */
type KeptAt = Kept & { readonly path: string };

type MovedEntry = Extract<NonNullable<UndoRecord['change']>, { kind: 'moved_many' }>['entries'][number];

type Files = NonNullable<ToolHost['files']>;

/**
 * What keeping an undo record needs, as plain data: the worker's files
 * capability, the call's journal (a bulk move's), the store the records
 * go to, and the clock. Nothing here calls back into the gate's steps.
 */
export interface UndoKeeping {
  readonly files: Files | undefined;
  readonly journal: () => JournalCapability | undefined;
  readonly records: Pick<NonceStore, 'recordUndo' | 'undoRecord' | 'reviseUndo'>;
  readonly now: () => number;
}

/** The call whose change is kept: its grant's nonce, and the call as it ran. */
export interface KeptCall {
  readonly nonce: string;
  readonly jobId: string;
  readonly callId: string;
  readonly toolName: string;
  readonly args: Readonly<Record<string, unknown>>;
}

export function keptCall(input: ExecuteInput): KeptCall {
  return { nonce: input.grant.claims.nonce, jobId: input.jobId, callId: input.callId, toolName: input.toolName, args: input.args };
}

/** A reconciliation's leave to finish a write a kill cut short: the content the approved call writes. */
interface CutWrites {
  readonly content: string | undefined;
}

/**
 * Whether the change the call's folder speaks of happened, as the targets
 * show now: 'none' when it did not (or not as kept: nothing to record),
 * 'dropped' when it did not and what was kept for it went.
 */
async function keptOf(files: Files, nonce: string, change: KeptChange, before: readonly ObservedState[], entry: HeldEntry, target: FileState, cut: CutWrites | undefined): Promise<Kept | 'none' | 'dropped'> {
  const seen = (path: string, hash: boolean) => files.observe(path, { follow: false, hash });
  switch (change.kind) {
    case 'moved_aside':
      return { held: entry, change, asideBytes: entry.bytes };
    case 'mode': {
      // Recorded only for the inode the chmod acted on, once it carries the mode it set; the mode before is the one read on that inode.
      if (target.exists && (target.dev !== change.dev || target.ino !== change.ino)) return 'none';
      const now = await seen(target.path, false);
      if (!now.exists || now.dev !== change.dev || now.ino !== change.ino || now.mode !== change.after) return 'none';
      return { held: { ...entry, mode: change.before }, change, asideBytes: 0 };
    }
    case 'replaced': {
      // Written in place: the same inode, holding what the write wrote (or finished here, when a kill cut the write).
      if (!target.exists || (change.ino !== undefined && (change.dev !== target.dev || change.ino !== target.ino))) return 'none';
      let now = await seen(target.path, true);
      if (!now.exists || now.dev !== target.dev || now.ino !== target.ino) return 'none';
      if (now.sha256 !== change.after && change.writing && cut?.content !== undefined && (await files.finishWrite(target.path, cut.content, { kind: 'overwrite' }))) now = await seen(target.path, true);
      if (!now.exists || now.type !== 'file' || now.sha256 !== change.after) return 'none';
      return { held: entry, change: { kind: 'replaced', after: change.after, ...(change.born !== undefined ? { born: change.born } : {}) }, asideBytes: entry.bytes };
    }
    case 'appended': {
      if (!target.exists || target.dev !== change.dev || target.ino !== change.ino || target.size !== change.size) return 'none';
      let now = await seen(target.path, true);
      if (!now.exists || now.dev !== change.dev || now.ino !== change.ino) return 'none';
      if (now.sha256 !== change.after && change.writing && cut?.content !== undefined && target.sha256 !== null && (await files.finishWrite(target.path, cut.content, { kind: 'append', size: change.size, before: target.sha256 }))) now = await seen(target.path, true);
      if (!now.exists || now.sha256 !== change.after) return 'none';
      // Nothing is set aside: the undo cuts the file back to its length before.
      const { writing: _writing, ...appended } = change;
      return { held: entry, change: appended, asideBytes: 0 };
    }
    case 'moved': {
      const dest = before[1];
      if (dest === undefined || !isFileState(dest)) return 'none';
      const moved = { dev: change.dev, ino: change.ino, born: change.born };
      const from = await seen(target.path, false);
      const to = await seen(dest.path, false);
      const at = (state: FileState, file: { readonly dev: number; readonly ino: number }) => state.exists && state.dev === file.dev && state.ino === file.ino;
      // Never moved: still at its place, and the destination still what the move would have replaced (or not the moved entry). Only then does what was kept go.
      if (at(from, moved) && (change.replaced !== null ? at(to, change.replaced) : !at(to, moved))) {
        await files.unhold(nonce);
        return 'dropped';
      }
      if (!at(to, moved)) return 'none';
      // The replaced file as kept (its second name), with its digest from before when it is that very file.
      const kept = change.replaced;
      const same = dest.exists && dest.dev === kept?.dev && dest.ino === kept.ino;
      const replaced: HeldEntry | undefined =
        kept === null
          ? undefined
          : { type: 'file', bytes: kept.size, files: null, digest: same ? dest.sha256 : null, mode: kept.mode, dev: kept.dev, ino: kept.ino, ...(same && dest.links !== undefined ? { links: dest.links } : {}) };
      return {
        held: entry,
        change: {
          kind: 'moved',
          to: pathDigest(dest.path),
          ...(change.born !== undefined ? { born: change.born } : {}),
          ...(replaced !== undefined ? { replaced: { ...replaced, ...(kept?.born !== undefined ? { born: kept.born } : {}) } } : {}),
        },
        asideBytes: replaced?.bytes ?? 0,
      };
    }
    case 'moved_many':
      // Kept from the call's journal (`keptMoves`), never from one target.
      return 'none';
  }
}

/** The moved entries as one held set: their bytes and files in total. */
function setOf(entries: readonly MovedEntry[]): HeldEntry {
  const sum = (f: (e: MovedEntry) => number) => entries.reduce((n, e) => n + f(e), 0);
  return { type: 'set', bytes: sum((e) => e.held.bytes), files: sum((e) => (e.held.type === 'file' ? 1 : (e.held.files ?? 0))), digest: null, mode: '' };
}

/**
 * A bulk move's record: the entries its journal says it moved (or was
 * moving) that are at their destinations now (the very entry, its source
 * gone), each with what it was before. None moved and all still at their places: what was kept
 * goes ('dropped'). The journal is read before the call's outcome is
 * stored, which is when it goes. A reconciliation records what moved
 * before it resumes the move (its grant may have expired meanwhile), and
 * the record is revised after with what the resumed move added.
 */
async function keptMoves(keeping: UndoKeeping, files: Files, nonce: string, settling: boolean): Promise<KeptAt | 'none' | 'dropped'> {
  const journal = keeping.journal();
  const view = journal === undefined ? undefined : readJournal(await journal.read());
  const plan = view?.plan;
  if (view === undefined || plan === undefined) {
    // No plan written: the kill came before the first move.
    if (journal === undefined) return 'none';
    await files.unhold(nonce);
    return 'dropped';
  }
  const entries: MovedEntry[] = [];
  let untouched = 0;
  // The record's path: the first source, as observed (canonical).
  let first: string | undefined;
  for (const [index, p] of plan.entries.entries()) {
    // An entry that cannot be observed now (its folder swapped for a link out of the roots) is neither moved nor untouched: the others are still recorded.
    const seen = await Promise.all([p.from, p.to].map((path) => files.observe(path, { follow: false, hash: false }).catch(() => undefined)));
    const [from, to] = seen;
    if (from === undefined || to === undefined) continue;
    first ??= from.path;
    let status = classifyEntry(p, from, to);
    const journaled = view.moved.has(index) ? 'moved' : view.moving.has(index) ? 'moving' : 'planned';
    // A file a kill left under both names (between the link and the unlink of its move): its old name goes, as the approved move meant, only while it is still that file.
    if (status === 'linked' && journaled === 'moving' && (await files.dropName(p.from, { dev: p.dev, ino: p.ino }))) status = 'moved';
    if (status === 'not_moved' && journaled !== 'moved') untouched++;
    // What this call moved, by its journal: one it recorded as moved is at its destination (its inode, edited since or not: the undo then says so); one it was moving is moved as planned. Anything else moved by someone else is not this call's.
    const moved = journaled === 'moved' ? !from.exists && to.exists && to.dev === p.dev && to.ino === p.ino : journaled === 'moving' && status === 'moved';
    if (!moved || p.type === 'other') continue;
    const held: HeldEntry = { type: p.type, bytes: p.bytes ?? p.size, files: p.files ?? null, digest: p.digest ?? null, mode: p.mode ?? '', dev: p.dev, ino: p.ino, ...(p.type === 'file' ? { mtimeMs: p.mtimeMs } : {}), ...(p.links !== undefined ? { links: p.links } : {}) };
    entries.push({ index, from: pathDigest(from.path), to: pathDigest(to.path), held, ...(p.born !== undefined ? { born: p.born } : {}) });
  }
  if (entries.length === 0) {
    // A reconciliation resumes a move with entries left to move (and records it after); otherwise nothing is there to undo.
    if (settling && untouched > 0) return 'none';
    await files.unhold(nonce);
    return 'dropped';
  }
  return {
    held: setOf(entries),
    change: { kind: 'moved_many', count: plan.entries.length, list: movesDigest(plan.entries, files.roots[0] ?? '/'), entries },
    asideBytes: 0,
    path: first ?? '',
  };
}

/** A change of the call's first target (every kind but a bulk move), from the state recorded right before it. */
async function keptOne(files: Files, nonce: string, change: KeptChange, call: KeptCall, before: readonly ObservedState[] | undefined, settling: boolean): Promise<KeptAt | 'none' | 'dropped'> {
  // What was kept is known only from the state recorded right before the change; without it the entry stays until retention purges it.
  const target = before?.[0];
  if (before === undefined || target === undefined || !isFileState(target)) return 'none';
  const entry = heldEntryOf(target);
  if (entry === undefined) return 'none';
  const content = typeof call.args.content === 'string' ? call.args.content : undefined;
  const kept = await keptOf(files, nonce, change, before, entry, target, settling ? { content } : undefined);
  return kept === 'none' || kept === 'dropped' ? kept : { ...kept, path: target.path };
}

/**
 * After a changing call ran, or was found to have run: when it kept
 * something for undo, its record goes into the store (once: a retry or a
 * reconciliation after a crash between the effect and this finds what was
 * kept by the nonce and records it then). Written before the outcome, so
 * a call with an outcome that kept something has its record. With
 * `settling` (a reconciliation after a crash, before it decides), a write
 * the kill cut short is finished first, as the approved call meant, and a
 * bulk move with entries left to move is recorded once resumed. 'dropped':
 * what the call kept belonged to a change that never happened, and went
 * (the targets are as they were before the call again).
 */
export async function keepUndoRecord(keeping: UndoKeeping, call: KeptCall, before: readonly ObservedState[] | undefined, options: { readonly settling?: boolean } = {}): Promise<'kept' | 'dropped' | 'none'> {
  const files = keeping.files;
  if (files === undefined) return 'none';
  const nonce = call.nonce;
  const place = await files.held(nonce);
  if (place === undefined) return 'none';
  const settling = options.settling === true;
  const kept = place.change.kind === 'moved_many' ? await keptMoves(keeping, files, nonce, settling) : await keptOne(files, nonce, place.change, call, before, settling);
  if (kept === 'none' || kept === 'dropped') return kept;
  const { path, held, change, asideBytes } = kept;
  const now = keeping.now();
  const record: UndoRecord = {
    schemaVersion: 1,
    nonce,
    jobId: call.jobId,
    callId: call.callId,
    toolName: call.toolName,
    root: place.root,
    pathDigest: pathDigest(path),
    held,
    change,
    asideBytes,
    heldAt: new Date(now).toISOString(),
    expiresAt: new Date(heldUntil(now, place.keepDays)).toISOString(),
    state: 'held',
  };
  // Recorded once; a bulk move resumed after a crash revises it with what it moved since (its times stay, and no entry recorded before is dropped).
  if (!(await keeping.records.recordUndo(record)) && change.kind === 'moved_many') {
    const before = (await keeping.records.undoRecord(nonce))?.change;
    const known = before?.kind === 'moved_many' ? before.entries.filter((e) => !change.entries.some((n) => n.index === e.index)) : [];
    const entries = [...change.entries, ...known].sort((a, b) => a.index - b.index);
    await keeping.records.reviseUndo({ ...record, held: setOf(entries), change: { ...change, entries } });
  }
  return 'kept';
}
