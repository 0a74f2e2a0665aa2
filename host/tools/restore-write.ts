import { lstat, rename } from 'node:fs/promises';
import { ToolRefusal } from '../../core/tools/tool-refusal';
import { errnoCode, O_NONBLOCK, O_WRONLY, openFd, release, truncateFd } from './descriptors';
import { observePinned } from './observe';
import type { Pinned } from './pinned-path';
import { callOf, sameFile, type ChangeOf, type ChangeUndo, type UndoContext } from './restore-context';
import { keptUnchanged } from './restore-entry';

/**
 * Undo of a write, only while the file still holds exactly what the write
 * left (its digest): an overwrite puts the kept file back in one rename
 * over the written one (the old inode, owner, mode and times with it), an
 * append cuts the file back to its length before. Either is one system
 * call, so a kill leaves the written state or the one before, never a mix.
 */

/** sha256 of the pinned entry's content now; null for what is not a file, or past the hash limit. */
async function digestOf(c: UndoContext, entry: Pinned): Promise<string | null> {
  if (entry.stats === null || !entry.stats.isFile()) return null;
  const seen = await observePinned(entry, { follow: false, ...(c.hashLimitBytes !== undefined ? { hashLimitBytes: c.hashLimitBytes } : {}) });
  return seen.exists ? seen.sha256 : null;
}

function mustBeAFile(target: Pinned, verb: string): void {
  const stats = target.stats;
  if (stats === null) throw new ToolRefusal(`${target.path} is not there now (deleted or moved after the ${verb}): undo that first, then this`);
  if (!stats.isFile()) throw new ToolRefusal(`${target.path} is ${stats.isDirectory() ? 'a folder' : stats.isSymbolicLink() ? 'a symbolic link' : 'no regular file'} now (replaced after the ${verb}); nothing was put back`);
}

export function replacedUndo(c: UndoContext, change: ChangeOf<'replaced'>): ChangeUndo {
  const { record, target, held, t } = c;
  return {
    // The kept file back at its path (its inode: a rename keeps it) and no longer kept.
    async back() {
      const stats = target.stats;
      if (held !== null || stats === null || record.held.ino === undefined || record.held.dev === undefined) return false;
      if (!sameFile(stats, { dev: record.held.dev, ino: record.held.ino, born: change.born })) return false;
      return record.held.digest === null ? change.born !== undefined : (await digestOf(c, target)) === record.held.digest;
    },

    async check() {
      mustBeAFile(target, 'write');
      if ((await digestOf(c, target)) !== change.after) throw new ToolRefusal(`${target.path} changed after the write (its content is not what the write left); nothing was put back`);
      await keptUnchanged(c, 'kept of it before the write');
    },

    async undo() {
      if (held === null || target.stats === null) throw new ToolRefusal(`what ${callOf(t)} kept is no longer there`);
      // The name still holds the file checked: a rename replaces whatever is there at that instant.
      const now = await lstat(target.entryPath()).catch(() => undefined);
      if (now === undefined || now.dev !== target.stats.dev || now.ino !== target.stats.ino) throw new ToolRefusal(`${target.path} was replaced while it was being put back; nothing was put back`);
      try {
        await rename(held.entryPath(), target.entryPath());
      } catch (err) {
        // Another undo of the same call put it back first.
        if (errnoCode(err) === 'ENOENT') throw new ToolRefusal(`what ${callOf(t)} kept went while it was being put back (another undo, or its undo time ended)`);
        throw new ToolRefusal(`${target.path} could not be put back (${errnoCode(err) ?? 'error'}); nothing was put back`);
      }
      return `put ${target.path} back as it was before the write`;
    },
  };
}

export function appendedUndo(c: UndoContext, change: ChangeOf<'appended'>): ChangeUndo {
  const { record, target, t } = c;
  return {
    async back() {
      const stats = target.stats;
      return stats !== null && stats.isFile() && sameFile(stats, change) && stats.size === change.size && (await digestOf(c, target)) === record.held.digest;
    },

    async check() {
      mustBeAFile(target, 'append');
      if (!sameFile(target.stats, change)) throw new ToolRefusal(`${target.path} is another file than the one ${callOf(t)} appended to (replaced since); nothing was cut`);
      if ((await digestOf(c, target)) !== change.after) throw new ToolRefusal(`${target.path} changed after the append (its content is not what the append left); nothing was cut`);
    },

    async undo() {
      // The descriptor's magic link: the inode that was checked.
      const fd = openFd(target.selfPath(), O_WRONLY | O_NONBLOCK);
      try {
        await truncateFd(fd, change.size);
      } finally {
        release(fd);
      }
      return `took the appended bytes off ${target.path} (back to ${change.size} bytes)`;
    },
  };
}
