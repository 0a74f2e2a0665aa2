import type { Stats } from 'node:fs';
import { chmod, link, lstat, rename, rmdir, unlink } from 'node:fs/promises';
import { HOLDING_FOLDER } from '../../core/tools/fs/holding-folder';
import type { FileState } from '../../core/tools/observed-state';
import type { ToolOutcome } from '../../core/tools/outcome';
import { ToolRefusal } from '../../core/tools/tool-refusal';
import type { Undoable, UndoTarget } from '../../core/tools/undo';
import { pathDigest } from '../nonces/nonce-store';
import type { UndoRecord, UndoRecords } from '../nonces/undo-records';
import type { Roots } from '../roots';
import { ErrnoError, errnoCode, fstatFd, O_DIRECTORY, O_NOFOLLOW, O_PATH, openFd, procPath, release } from './descriptors';
import { dropMode, HELD_NAME, openHolding } from './holding';
import { modeText, observePinned } from './observe';
import { Pinned, pin } from './pinned-path';
import type { TreeLimits } from './tree';

/**
 * `fs_undo`'s hands: puts an entry a reversible change moved aside back at
 * its path. Only when its record is still held and in its undo time, the
 * path names what the change named (its digest matches), nothing is at
 * the path now, and the held entry is still what was moved aside. A folder
 * goes back in one rename, a file by a link that refuses an existing name
 * and an unlink; the record is marked restored after. A kill in between
 * leaves the entry back and the record held, or the file under both names:
 * `restore` and `restored` finish either.
 *
 * What Linux gives Node no way to refuse: a rename replaces an empty folder
 * that appears at the path between the check and the rename (a file or a
 * non-empty folder there makes it fail); and a file the kernel will not
 * link back (see `restoreFile`) replaces one made at its path in the
 * instant between its check and its rename.
 */

export interface RestoreDeps {
  readonly roots: Roots;
  readonly records: UndoRecords | undefined;
  readonly treeLimits?: TreeLimits;
  readonly now?: () => number;
}

/** Refusal text: the call of the job, as a reviewer names it. */
const callOf = (t: UndoTarget) => `call ${t.call} of job ${t.job}`;

async function recordOf(deps: RestoreDeps, t: UndoTarget): Promise<UndoRecord> {
  if (deps.records === undefined) throw new ToolRefusal('this tools worker keeps no undo records');
  const record = await deps.records.undoRecordOfCall(t.job, t.call);
  if (record === undefined) throw new ToolRefusal(`${callOf(t)} kept nothing for undo (it was not a reversible change, or its record was forgotten after its undo time)`);
  return record;
}

/** Why a record can no longer be undone: settled, or past its undo time. */
function stillHeld(record: UndoRecord, t: UndoTarget, now: number): void {
  if (record.state === 'restored') throw new ToolRefusal(`${callOf(t)} was already undone${record.settledAt !== undefined ? ` (${record.settledAt})` : ''}`);
  if (record.state === 'purged' || Date.parse(record.expiresAt) <= now) throw new ToolRefusal(`the undo time of ${callOf(t)} ended on ${record.expiresAt}; what it changed cannot be put back`);
}

/** The call's path, pinned without following a final link, checked to be the path the change named. */
function pinTarget(deps: RestoreDeps, record: UndoRecord, t: UndoTarget): Pinned {
  let target: Pinned;
  try {
    target = pin(deps.roots, t.path, { follow: false });
  } catch (err) {
    if (err instanceof ErrnoError && (err.code === 'ENOENT' || err.code === 'ENOTDIR')) {
      throw new ToolRefusal(`the folder ${t.path} was in is not there now; recreate it (or undo its own delete first), then undo again`);
    }
    throw err;
  }
  if (target.root !== record.root || pathDigest(target.path) !== record.pathDigest) {
    target.close();
    throw new ToolRefusal(`${t.path} is not the path ${callOf(t)} changed; name that path`);
  }
  return target;
}

function occupied(target: Pinned, record: UndoRecord): ToolRefusal {
  const what = target.stats?.isDirectory() === true ? 'a folder' : target.stats?.isSymbolicLink() === true ? 'a symbolic link' : 'a file';
  // The very inode kept for undo: most likely put back by an undo cut short, which could not be confirmed; never advise deleting it.
  if (record.held.ino !== undefined && target.stats?.dev === record.held.dev && target.stats?.ino === record.held.ino) {
    return new ToolRefusal(`${target.path} is there again with the inode of what the change kept: it may be the entry an interrupted undo put back. Check it before you move or delete anything`);
  }
  return new ToolRefusal(`${target.path} exists again (${what} made after the change); move or delete it first, then undo again`);
}

/** The held entry, pinned in its call's folder without following links; null when it is not there. */
function pinHeld(record: UndoRecord): Pinned | null {
  const holding = openHolding(record.root);
  if (holding === undefined) return null;
  let folder: number | undefined;
  try {
    folder = openFd(procPath(holding, record.nonce), O_PATH | O_DIRECTORY | O_NOFOLLOW);
    const fd = openFd(procPath(folder, HELD_NAME), O_PATH | O_NOFOLLOW);
    const pinned = new Pinned(record.root, `${record.root}/${HOLDING_FOLDER}/${record.nonce}/${HELD_NAME}`, folder, HELD_NAME, fd, fstatFd(fd), false);
    folder = undefined;
    return pinned;
  } catch (err) {
    if (errnoCode(err) === 'ENOENT' || errnoCode(err) === 'ENOTDIR') return null;
    throw err;
  } finally {
    release(folder ?? null);
    release(holding);
  }
}

/** Whether the held entry is still what was moved aside: its type, mode, and content or tree digest (when one was known). */
function changedSince(record: UndoRecord, seen: FileState): string | undefined {
  const kept = record.held;
  if (!seen.exists || seen.type !== kept.type) return `it is no longer the ${kept.type === 'directory' ? 'folder' : 'file'} that was moved aside`;
  if (seen.mode !== kept.mode) return `its mode is ${seen.mode} now, ${kept.mode} when it was moved aside`;
  if (kept.digest === null) return undefined;
  const digest = seen.type === 'file' ? seen.sha256 : seen.tree?.complete === true ? seen.tree.sha256 : null;
  return digest === kept.digest ? undefined : 'its content changed since it was moved aside';
}

async function heldMatches(deps: RestoreDeps, record: UndoRecord, held: Pinned, t: UndoTarget): Promise<void> {
  const seen = await observePinned(held, { follow: false, deep: true, ...(deps.treeLimits !== undefined ? { treeLimits: deps.treeLimits } : {}) });
  const why = changedSince(record, seen);
  if (why !== undefined) throw new ToolRefusal(`what airlock keeps for ${callOf(t)} was changed (${why}); nothing was restored`);
}

/** The mode is back on the changed inode while the record is still held or just marked restored. */
function modeBack(record: UndoRecord, change: Extract<RecordChange, { kind: 'mode' }>, target: Pinned): boolean {
  const stats = target.stats;
  if (record.state === 'purged' || stats === null || stats.dev !== change.dev || stats.ino !== change.ino || (change.born !== undefined && stats.birthtimeMs !== change.born)) return false;
  // Back with or without the set-id and sticky bits it had (those go back only onto unchanged content).
  const now = modeText(stats);
  return now === record.held.mode || (now !== change.after && (stats.mode & 0o777) === (Number.parseInt(record.held.mode, 8) & 0o777));
}

/** sha256 of a file's content now (null past the hash limit, or for what is not a file). */
async function contentDigest(target: Pinned): Promise<string | null> {
  const seen = await observePinned(target, { follow: false });
  return seen.exists ? seen.sha256 : null;
}

const sameInode = (a: Pinned, b: Pinned) => a.stats !== null && b.stats !== null && a.stats.dev === b.stats.dev && a.stats.ino === b.stats.ino;

/**
 * A file goes back by a link, which refuses a name that exists, and its
 * held name goes after. Where the kernel will not link it (another user's
 * file under protected_hardlinks, a file system without links) it is
 * renamed back instead, once the name is seen free: a file made there in
 * that instant would be replaced.
 */
async function restoreFile(held: Pinned, target: Pinned): Promise<void> {
  try {
    await link(held.entryPath(), target.entryPath());
  } catch (err) {
    const code = errnoCode(err);
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'EMLINK') throw err;
    if ((await lstat(target.entryPath()).catch(() => undefined)) !== undefined) throw new ErrnoError('EEXIST', target.path);
    await rename(held.entryPath(), target.entryPath());
    return;
  }
  await unlink(held.entryPath());
}

/** The call's folder goes once its change is taken back: the mode file it kept, then the folder (retention would remove both too). */
async function dropFolder(record: UndoRecord): Promise<void> {
  await dropMode(record.root, record.nonce);
  const holding = openHolding(record.root);
  if (holding === undefined) return;
  try {
    await rmdir(procPath(holding, record.nonce)).catch(() => undefined);
  } finally {
    release(holding);
  }
}

/** What the record's change did (records before mode changes only moved entries aside). */
type RecordChange = NonNullable<UndoRecord['change']>;
const changeOf = (record: UndoRecord): RecordChange => record.change ?? { kind: 'moved_aside' };


/**
 * A mode change is taken back only on the very inode it changed, still
 * with the mode it set: anything else changed since, and is said so.
 */
function modeStillSet(change: Extract<RecordChange, { kind: 'mode' }>, target: Pinned, t: UndoTarget): Stats {
  const stats = target.stats;
  if (stats === null) throw new ToolRefusal(`${target.path} is not there now; nothing to put its mode back on`);
  if (stats.isSymbolicLink()) throw new ToolRefusal(`${target.path} is a symbolic link now; refusing to change a link's target`);
  // An inode number is given again once a file is removed: its birth time tells a file made since apart.
  if (stats.dev !== change.dev || stats.ino !== change.ino || (change.born !== undefined && stats.birthtimeMs !== change.born)) throw new ToolRefusal(`${target.path} is another file than the one ${callOf(t)} changed (replaced since); its mode was not changed`);
  if (modeText(stats) !== change.after) throw new ToolRefusal(`the mode of ${target.path} is ${modeText(stats)} now, not the ${change.after} ${callOf(t)} set (changed again since); its mode was not changed`);
  return stats;
}

async function refusing<T>(run: () => Promise<T>): Promise<T | { ok: false; reason: string }> {
  try {
    return await run();
  } catch (err) {
    if (err instanceof ToolRefusal) return { ok: false, reason: err.message };
    throw err;
  }
}

export function createRestore(deps: RestoreDeps) {
  const now = deps.now ?? Date.now;

  /** Runs `use` on the record, the pinned path and the pinned held entry, closing both after. */
  async function withPlaces<T>(t: UndoTarget, use: (record: UndoRecord, target: Pinned, held: Pinned | null) => Promise<T>): Promise<T> {
    const record = await recordOf(deps, t);
    const target = pinTarget(deps, record, t);
    try {
      const held = pinHeld(record);
      try {
        return await use(record, target, held);
      } finally {
        held?.close();
      }
    } finally {
      target.close();
    }
  }

  /** Marks the record restored; false when a purge settled it first (the entry is back all the same). */
  const settle = async (record: UndoRecord) => (await deps.records?.settleUndo(record.nonce, 'restored')) === true;

  /**
   * A restore a kill interrupted: the very entry that was moved aside back
   * at the path and no longer held — its device and inode (which a rename
   * and a link keep, but a new entry may get again once the old is gone)
   * and its content or tree digest (which a restore keeps) — or a file
   * under both names (its held name then goes). Anything else at the path
   * is someone else's, never taken for it.
   */
  async function finishInterrupted(record: UndoRecord, target: Pinned, held: Pinned | null): Promise<boolean> {
    if (record.state !== 'held' || target.stats === null) return false;
    if (held === null) {
      const kept = record.held;
      if (kept.ino === undefined || target.stats.dev !== kept.dev || target.stats.ino !== kept.ino) return false;
      // Without a digest (past the hash or tree limits), its birth time and type tell it is the very entry.
      const born = record.change?.kind === 'moved_aside' ? record.change.born : undefined;
      if (kept.digest === null) return born !== undefined && target.stats.birthtimeMs === born && target.stats.isDirectory() === (kept.type === 'directory');
      return changedSince(record, await observePinned(target, { follow: false, deep: true, ...(deps.treeLimits !== undefined ? { treeLimits: deps.treeLimits } : {}) })) === undefined;
    }
    if (record.held.type !== 'file' || !sameInode(target, held)) return false;
    await unlink(held.entryPath());
    return true;
  }

  /** An entry moved aside can go back: its record still held and in time, its path free, the entry kept and unchanged; the kept entry. */
  async function restorable(record: UndoRecord, target: Pinned, held: Pinned | null, t: UndoTarget): Promise<Pinned> {
    stillHeld(record, t, now());
    if (target.stats !== null) throw occupied(target, record);
    if (held === null) throw new ToolRefusal(`what ${callOf(t)} moved aside is no longer in ${record.root}'s holding folder; nothing can be put back`);
    await heldMatches(deps, record, held, t);
    return held;
  }

  async function undoable(t: UndoTarget): Promise<Undoable> {
    return refusing(() =>
      withPlaces(t, async (record, target, held) => {
        const change = changeOf(record);
        if (change.kind === 'mode') {
          stillHeld(record, t, now());
          modeStillSet(change, target, t);
        } else {
          await restorable(record, target, held, t);
        }
        return { ok: true as const, type: record.held.type, bytes: record.held.bytes, files: record.held.files, heldAt: record.heldAt, expiresAt: record.expiresAt };
      }),
    );
  }

  async function restore(t: UndoTarget): Promise<ToolOutcome> {
    try {
      return await withPlaces(t, async (record, target, held) => {
        const change = changeOf(record);
        if (change.kind === 'mode') return restoreMode(record, change, target, t);
        if (await finishInterrupted(record, target, held)) {
          await settle(record);
          await dropFolder(record);
          return { ok: true, output: `restored ${target.path} (an earlier attempt had put it back)` };
        }
        const kept = await restorable(record, target, held, t);
        try {
          if (record.held.type === 'directory') {
            await rename(kept.entryPath(), target.entryPath());
          } else {
            await restoreFile(kept, target);
          }
        } catch (err) {
          const code = errnoCode(err);
          if (code === 'EEXIST' || code === 'ENOTEMPTY' || code === 'ENOTDIR' || code === 'EISDIR') throw new ToolRefusal(`${target.path} was made again while it was being restored; nothing was restored`);
          if (code === 'EXDEV') throw new ToolRefusal(`${target.path} is on another file system than ${record.root} now; nothing was restored`);
          if (code === 'ENOENT') {
            const gone = pinHeld(record);
            gone?.close();
            throw new ToolRefusal(gone === null ? `what ${callOf(t)} moved aside went while it was being restored (another undo, or its undo time ended)` : `the folder ${t.path} was in went while it was being restored; nothing was restored`);
          }
          throw new ToolRefusal(`${target.path} could not be restored (${code ?? 'error'}); nothing was restored`);
        }
        const settled = await settle(record);
        await dropFolder(record);
        return { ok: true, output: settled ? `restored ${target.path}` : `restored ${target.path} (its undo time ended as it was put back)` };
      });
    } catch (err) {
      if (err instanceof ToolRefusal) return { ok: false, output: `Refused: ${err.message}` };
      throw err;
    }
  }

  /** Puts the mode back on the inode the change set it on; a kill after the chmod is finished here (the mode already back, the record held). */
  async function restoreMode(record: UndoRecord, change: Extract<RecordChange, { kind: 'mode' }>, target: Pinned, t: UndoTarget): Promise<ToolOutcome> {
    if (record.state === 'held' && modeBack(record, change, target)) {
      await settle(record);
      await dropFolder(record);
      return { ok: true, output: `put the mode of ${target.path} back to ${record.held.mode} (an earlier attempt had)` };
    }
    stillHeld(record, t, now());
    modeStillSet(change, target, t);
    const before = Number.parseInt(record.held.mode, 8) & 0o7777;
    // Set-id and sticky bits go back only onto the content they were on: a file written since gets its permission bits alone.
    const special = before & 0o7000;
    const same = special === 0 || record.held.type === 'directory' || (record.held.digest !== null && (await contentDigest(target)) === record.held.digest);
    const mode = same ? before : before & 0o777;
    // The descriptor's magic link: the inode that was checked, never a link's target.
    await chmod(target.selfPath(), mode);
    const settled = await settle(record);
    await dropFolder(record);
    const bits = same ? '' : ` (not its set-id or sticky bits: its content changed since)`;
    return { ok: true, output: `put the mode of ${target.path} back to ${mode.toString(8).padStart(3, '0')}${bits}${settled ? '' : ' (its undo time ended as it was put back)'}` };
  }

  async function restored(t: UndoTarget, options: { readonly pathWasFree: boolean }): Promise<{ present: boolean; detail: string }> {
    const answer = await refusing(() =>
      withPlaces(t, async (record, target, held) => {
        const change = changeOf(record);
        if (change.kind === 'mode') {
          if (!modeBack(record, change, target)) return { present: false, detail: `the mode of ${t.path} is not back to ${record.held.mode}` };
          if (record.state === 'held') await settle(record);
          await dropFolder(record);
          return { present: true, detail: `the mode of ${target.path} is back to ${record.held.mode}` };
        }
        // Something was at the path before the undo: it could only have been refused.
        if (!options.pathWasFree) return { present: false, detail: `${t.path} existed before the undo` };
        if (record.state === 'restored') return { present: target.stats !== null, detail: `${t.path} was restored` };
        if (!(await finishInterrupted(record, target, held))) return { present: false, detail: `${t.path} is not back where it was` };
        await settle(record);
        await dropFolder(record);
        return { present: true, detail: `${target.path} is back where it was` };
      }),
    );
    return 'reason' in answer ? { present: false, detail: answer.reason } : answer;
  }

  return { undoable, restore, restored };
}
