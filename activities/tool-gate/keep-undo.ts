import type { KeptChange } from '../../core/tools/capabilities/files';
import type { FileState, ObservedState } from '../../core/tools/observed-state';
import { isFileState } from '../../core/tools/observed-state';
import { heldUntil } from '../../core/tools/undo';
import { pathDigest } from '../../host/nonces/nonce-store';
import type { HeldEntry, UndoRecord } from '../../host/nonces/undo-records';
import type { ExecuteInput } from './messages';
import type { ToolRunner } from './runner';

/** The entry as it was right before the change, as the record keeps it; undefined for what no change holds (a link, nothing). */
function heldEntryOf(state: FileState): HeldEntry | undefined {
  if (!state.exists || (state.type !== 'file' && state.type !== 'directory')) return undefined;
  const inode = { dev: state.dev, ino: state.ino };
  if (state.type === 'file') return { type: 'file', bytes: state.size, files: null, digest: state.sha256, mode: state.mode, ...inode, mtimeMs: state.mtimeMs };
  const tree = state.tree?.complete === true ? state.tree : undefined;
  return { type: 'directory', bytes: tree?.bytes ?? 0, files: tree?.files ?? null, digest: tree?.sha256 ?? null, mode: state.mode, ...inode };
}

/** What the record keeps of a change that happened: the entry before, what the change did, and the bytes it set aside. */
type Kept = { readonly held: HeldEntry; readonly change: NonNullable<UndoRecord['change']>; readonly asideBytes: number };

type Files = NonNullable<ToolRunner['host']['files']>;

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
      if (!target.exists) return 'none';
      let now = await seen(target.path, true);
      if (!now.exists || now.dev !== target.dev || now.ino !== target.ino) return 'none';
      if (now.sha256 !== change.after && change.writing && cut?.content !== undefined && (await files.finishWrite(target.path, cut.content, { kind: 'overwrite' }))) now = await seen(target.path, true);
      if (!now.exists || now.type !== 'file' || now.sha256 !== change.after) return 'none';
      return { held: entry, change: { kind: 'replaced', after: change.after }, asideBytes: entry.bytes };
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
      const replaced: HeldEntry | undefined =
        kept === null
          ? undefined
          : { type: 'file', bytes: kept.size, files: null, digest: dest.exists && dest.dev === kept.dev && dest.ino === kept.ino ? dest.sha256 : null, mode: kept.mode, dev: kept.dev, ino: kept.ino };
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
  }
}

/**
 * After a changing call ran, or was found to have run: when it kept
 * something for undo, its record goes into the store (once: a retry or a
 * reconciliation after a crash between the effect and this finds what was
 * kept by the nonce and records it then). Written before the outcome, so
 * a call with an outcome that kept something has its record. With
 * `finishCut` (a reconciliation after a crash), a write the kill cut short
 * is finished first, as the approved call meant. 'dropped':
 * what the call kept belonged to a change that never happened, and went
 * (the targets are as they were before the call again).
 */
export async function keepUndoRecord(runner: ToolRunner, input: ExecuteInput, before: readonly ObservedState[] | undefined, options: { readonly finishCut?: boolean } = {}): Promise<'kept' | 'dropped' | 'none'> {
  const files = runner.host.files;
  if (files === undefined) return 'none';
  const nonce = input.grant.claims.nonce;
  const place = await files.held(nonce);
  if (place === undefined) return 'none';
  // What was kept is known only from the state recorded right before the change; without it the entry stays until retention purges it.
  const target = before?.[0];
  if (before === undefined || target === undefined || !isFileState(target)) return 'none';
  const entry = heldEntryOf(target);
  if (entry === undefined) return 'none';
  const content = typeof input.args.content === 'string' ? input.args.content : undefined;
  const kept = await keptOf(files, nonce, place.change, before, entry, target, options.finishCut === true ? { content } : undefined);
  if (kept === 'none' || kept === 'dropped') return kept;
  const now = runner.now();
  await runner.deps.nonces.recordUndo({
    schemaVersion: 1,
    nonce,
    jobId: input.jobId,
    callId: input.callId,
    toolName: input.toolName,
    root: place.root,
    pathDigest: pathDigest(target.path),
    ...kept,
    heldAt: new Date(now).toISOString(),
    expiresAt: new Date(heldUntil(now, place.keepDays)).toISOString(),
    state: 'held',
  });
  return 'kept';
}
