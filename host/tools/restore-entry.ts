import { link, lstat, rename, unlink } from 'node:fs/promises';
import type { FileState } from '../../core/tools/observed-state';
import { ToolRefusal } from '../../core/tools/tool-refusal';
import type { UndoRecord } from '../stores/nonces/undo-records';
import { ErrnoError, errnoCode } from '../fs/descriptors';
import { observePinned } from './observe';
import type { Pinned } from '../fs/pinned-path';
import { callOf, type ChangeUndo, type UndoContext } from './restore-context';

/**
 * Undo of a delete: the entry moved aside goes back at its path, only
 * when nothing is there and the kept entry is still what was moved aside.
 * A folder goes back in one rename, a file by a link that refuses an
 * existing name and an unlink of its kept name. A kill in between leaves
 * the entry back and the record held, or the file under both names:
 * `back` finishes either.
 *
 * What Linux gives Node no way to refuse: a rename replaces an empty folder
 * that appears at the path between the check and the rename (a file or a
 * non-empty folder there makes it fail); and a file the kernel will not
 * link back (see `linkBack`) replaces one made at its path in the
 * instant between its check and its rename.
 */

export function occupied(target: Pinned, record: UndoRecord): ToolRefusal {
  const what = target.stats?.isDirectory() === true ? 'a folder' : target.stats?.isSymbolicLink() === true ? 'a symbolic link' : 'a file';
  // The very inode kept for undo: most likely put back by an undo cut short, which could not be confirmed; never advise deleting it.
  if (record.held.ino !== undefined && target.stats?.dev === record.held.dev && target.stats?.ino === record.held.ino) {
    return new ToolRefusal(`${target.path} is there again with the inode of what the change kept: it may be the entry an interrupted undo put back. Check it before you move or delete anything`);
  }
  return new ToolRefusal(`${target.path} exists again (${what} made after the change); move or delete it first, then undo again`);
}

/** Whether an entry is still what the change kept: its type, inode, mode, names (a file's hard links), and content or tree digest (when one was known). */
export function changedSince(record: UndoRecord, seen: FileState): string | undefined {
  const kept = record.held;
  if (!seen.exists || seen.type !== kept.type) return `it is no longer the ${kept.type === 'directory' ? 'folder' : 'file'} that was kept`;
  // A rename and a link keep the inode: another one in its place was put there by someone else.
  if (kept.ino !== undefined && (seen.dev !== kept.dev || seen.ino !== kept.ino)) return `it is another ${kept.type === 'directory' ? 'folder' : 'file'} than the one that was kept`;
  if (seen.mode !== kept.mode) return `its mode is ${seen.mode} now, ${kept.mode} when it was kept`;
  // A name made since may lie outside the roots: what goes back would have it there too.
  if (seen.type === 'file' && (seen.links ?? 1) !== (kept.links ?? 1)) return `it has ${seen.links ?? 1} names (hard links) now, ${kept.links ?? 1} when it was kept: a name was made or removed since, possibly outside the allowed folders`;
  if (kept.digest === null) return undefined;
  const digest = seen.type === 'file' ? seen.sha256 : seen.tree?.complete === true ? seen.tree.sha256 : null;
  return digest === kept.digest ? undefined : 'its content changed since it was kept';
}

/** The kept entry, observed as deeply as it was when kept (hash and tree limits as configured). */
export function observeKept(c: UndoContext, entry: Pinned): Promise<FileState> {
  return observePinned(entry, { follow: false, deep: true, ...(c.treeLimits !== undefined ? { treeLimits: c.treeLimits } : {}), ...(c.hashLimitBytes !== undefined ? { hashLimitBytes: c.hashLimitBytes } : {}) });
}

/** Refuses unless the kept entry is there and still what the change kept; the kept entry. */
export async function keptUnchanged(c: UndoContext, what: string): Promise<Pinned> {
  if (c.held === null) throw new ToolRefusal(`what ${callOf(c.t)} ${what} is no longer in ${c.record.root}'s holding folder; nothing can be put back`);
  // An inode number is given again once a file is removed: its birth time tells the kept entry from a later one.
  const born = c.record.change?.kind === 'moved_aside' ? c.record.change.born : undefined;
  const reborn = born !== undefined && c.held.stats !== null && c.held.stats.birthtimeMs !== born ? 'it is another entry than the one that was kept (born at another time)' : undefined;
  const why = reborn ?? changedSince(c.record, await observeKept(c, c.held));
  if (why !== undefined) throw new ToolRefusal(`what airlock keeps for ${callOf(c.t)} was changed (${why}); nothing was restored`);
  return c.held;
}

/**
 * A file goes back by a link, which refuses a name that exists, and the
 * name it had goes after. Where the kernel will not link it (another user's
 * file under protected_hardlinks, a file system without links) it is
 * renamed back instead, once the name is seen free: a file made there in
 * that instant would be replaced.
 */
export async function linkBack(held: Pinned, target: Pinned, linked: () => Promise<boolean> = async () => true): Promise<boolean> {
  try {
    await link(held.entryPath(), target.entryPath());
  } catch (err) {
    const code = errnoCode(err);
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'EMLINK') throw err;
    if ((await lstat(target.entryPath()).catch(() => undefined)) !== undefined) throw new ErrnoError('EEXIST', target.path);
    await rename(held.entryPath(), target.entryPath());
    return true;
  }
  // `linked` may look at what the new name holds before the old one goes (false: it undid the link, and the old name stays).
  if (!(await linked())) return false;
  await unlink(held.entryPath());
  return true;
}

const sameInode = (a: Pinned, b: Pinned) => a.stats !== null && b.stats !== null && a.stats.dev === b.stats.dev && a.stats.ino === b.stats.ino;

export function entryUndo(c: UndoContext, regained: () => Pinned | null): ChangeUndo {
  const { record, target, held, t } = c;
  return {
    /**
     * The very entry that was moved aside back at the path and no longer
     * held — its device and inode (which a rename and a link keep, but a
     * new entry may get again once the old is gone) and its content or
     * tree digest (which a restore keeps) — or a file under both names
     * (its held name then goes). Anything else at the path is someone
     * else's, never taken for it.
     */
    async back() {
      if (target.stats === null) return false;
      if (held === null) {
        const kept = record.held;
        if (kept.ino === undefined || target.stats.dev !== kept.dev || target.stats.ino !== kept.ino) return false;
        // Without a digest (past the hash or tree limits), its birth time and type tell it is the very entry.
        const born = record.change?.kind === 'moved_aside' ? record.change.born : undefined;
        if (kept.digest === null) return born !== undefined && target.stats.birthtimeMs === born && target.stats.isDirectory() === (kept.type === 'directory');
        return changedSince(record, await observeKept(c, target)) === undefined;
      }
      if (record.held.type !== 'file' || !sameInode(target, held)) return false;
      await unlink(held.entryPath());
      return true;
    },

    async check() {
      if (target.stats !== null) throw occupied(target, record);
      await keptUnchanged(c, 'moved aside');
    },

    async undo() {
      if (held === null) throw new ToolRefusal(`what ${callOf(t)} moved aside is no longer kept`);
      try {
        if (record.held.type === 'directory') await rename(held.entryPath(), target.entryPath());
        else await linkBack(held, target);
      } catch (err) {
        const code = errnoCode(err);
        if (code === 'EEXIST' || code === 'ENOTEMPTY' || code === 'ENOTDIR' || code === 'EISDIR') throw new ToolRefusal(`${target.path} was made again while it was being restored; nothing was restored`);
        if (code === 'EXDEV') throw new ToolRefusal(`${target.path} is on another file system than ${record.root} now; nothing was restored`);
        if (code === 'ENOENT') {
          const gone = regained();
          gone?.close();
          throw new ToolRefusal(gone === null ? `what ${callOf(t)} moved aside went while it was being restored (another undo, or its undo time ended)` : `the folder ${t.path} was in went while it was being restored; nothing was restored`);
        }
        throw new ToolRefusal(`${target.path} could not be restored (${code ?? 'error'}); nothing was restored`);
      }
      return `restored ${target.path}`;
    },
  };
}
