import type { FileState, ObservedState } from '../../core/tools/observed-state';
import { isFileState } from '../../core/tools/observed-state';
import { pathDigest } from '../../host/nonces/nonce-store';
import { heldUntil } from '../../core/tools/undo';
import type { HeldEntry } from '../../host/nonces/undo-records';
import type { ExecuteInput } from './messages';
import type { ToolRunner } from './runner';

/** The entry as it was right before the change, as the record keeps it; undefined for what no change holds (a link, nothing). */
function heldEntryOf(state: FileState): HeldEntry | undefined {
  if (!state.exists || (state.type !== 'file' && state.type !== 'directory')) return undefined;
  const inode = { dev: state.dev, ino: state.ino };
  if (state.type === 'file') return { type: 'file', bytes: state.size, files: null, digest: state.sha256, mode: state.mode, ...inode };
  const tree = state.tree?.complete === true ? state.tree : undefined;
  return { type: 'directory', bytes: tree?.bytes ?? 0, files: tree?.files ?? null, digest: tree?.sha256 ?? null, mode: state.mode, ...inode };
}

/**
 * After a changing call ran, or was found to have run: when it kept an
 * entry for undo, its record goes into the store (once: a retry or a
 * reconciliation after a crash between the effect and this finds the held
 * entry by the nonce and records it then). Written before the outcome, so
 * a call with an outcome that held something has its record. 'dropped':
 * what the call kept belonged to a change that never happened, and went
 * (the target is as it was before the call again).
 */
export async function keepUndoRecord(runner: ToolRunner, input: ExecuteInput, before: readonly ObservedState[] | undefined): Promise<'kept' | 'dropped' | 'none'> {
  const files = runner.host.files;
  if (files === undefined) return 'none';
  const nonce = input.grant.claims.nonce;
  const place = await files.held(nonce);
  if (place === undefined) return 'none';
  // What was held is known only from the state recorded right before the change; without it the entry stays until retention purges it.
  const target = before?.[0];
  if (target === undefined || !isFileState(target)) return 'none';
  const entry = heldEntryOf(target);
  if (entry === undefined) return 'none';
  const change = place.change;
  let held: HeldEntry = entry;
  if (change.kind === 'mode') {
    // Recorded only for the inode the chmod acted on, once it carries the mode it set; the mode before is the one read on that inode.
    if (target.exists && (target.dev !== change.dev || target.ino !== change.ino)) return 'none';
    const now = await files.observe(target.path, { follow: false, hash: false });
    if (!now.exists || now.dev !== change.dev || now.ino !== change.ino || now.mode !== change.after) return 'none';
    held = { ...entry, mode: change.before };
  } else if (change.kind === 'replaced') {
    const now = await files.observe(target.path, { follow: false, hash: true });
    // Still the old file at the path: the new one never took its place, so nothing changed and nothing is kept.
    if (now.exists && target.exists && now.dev === target.dev && now.ino === target.ino) {
      await files.unhold(nonce);
      return 'dropped';
    }
    // Recorded only while the path holds what the write wrote.
    if (!now.exists || now.type !== 'file' || now.sha256 !== change.after) return 'none';
  } else if (change.kind === 'appended') {
    if (!target.exists || target.dev !== change.dev || target.ino !== change.ino || target.size !== change.size) return 'none';
    const now = await files.observe(target.path, { follow: false, hash: true });
    if (!now.exists || now.dev !== change.dev || now.ino !== change.ino || now.sha256 !== change.after) return 'none';
  }
  const now = runner.now();
  await runner.deps.nonces.recordUndo({
    schemaVersion: 1,
    nonce,
    jobId: input.jobId,
    callId: input.callId,
    toolName: input.toolName,
    root: place.root,
    pathDigest: pathDigest(target.path),
    held,
    change,
    heldAt: new Date(now).toISOString(),
    expiresAt: new Date(heldUntil(now, place.keepDays)).toISOString(),
    state: 'held',
  });
  return 'kept';
}
