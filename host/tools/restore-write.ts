import { futimesSync } from 'node:fs';
import { lstat, unlink } from 'node:fs/promises';
import { ToolRefusal } from '../../core/tools/tool-refusal';
import { errnoCode, fstatFd, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_RDONLY, O_RDWR, O_WRONLY, openFd, procPath, release, truncateFd } from '../fs/descriptors';
import { completeFrom } from './kept-bytes';
import { UNDOING_NAME } from './call-folder';
import { observePinned } from './observe';
import type { Pinned } from '../fs/pinned-path';
import { callOf, namesChanged, sameFile, type ChangeOf, type ChangeUndo, type UndoContext } from './restore-context';

/**
 * Undo of a write, only while the very file the write left (its device,
 * inode and birth time, with as many names as it had) still holds exactly
 * what the write left (its digest), in place as the write was: an overwrite writes the
 * kept copy of the content before back into the file (a kill part way
 * leaves a prefix of it, which the next attempt finishes); an append cuts
 * the file back to its length before (one system call). What no check can
 * close: a program writing the file in the instant between the undo's
 * check and its write has that write replaced.
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

type ChangedFile = { readonly dev?: number | undefined; readonly ino?: number | undefined; readonly born?: number | undefined };

/** Why the pinned target is not the very file the change left (device, inode, birth time) with the names it left it (hard links); undefined when it is. */
function notTheFile(target: Pinned, file: ChangedFile, links: number | undefined, t: UndoContext['t'], verb: string): string | undefined {
  if (file.dev === undefined || file.ino === undefined) return `the record of ${callOf(t)} does not say which file it changed (kept by an older airlock)`;
  if (!sameFile(target.stats, { dev: file.dev, ino: file.ino, born: file.born })) return `${target.path} is another file than the one ${callOf(t)} ${verb} (replaced since)`;
  const names = namesChanged(target.stats, links);
  return names === undefined ? undefined : `${target.path} ${names}`;
}

function mustBeTheFile(target: Pinned, file: ChangedFile, links: number | undefined, t: UndoContext['t'], verb: string, nothing: string): void {
  const why = notTheFile(target, file, links, t, verb);
  if (why !== undefined) throw new ToolRefusal(`${why}; ${nothing}`);
}

export function replacedUndo(c: UndoContext, change: ChangeOf<'replaced'>): ChangeUndo {
  const { record, target, held: copy, t } = c;
  const file = { dev: record.held.dev, ino: record.held.ino, born: change.born };
  const isTheFile = () => notTheFile(target, file, record.held.links, t, 'wrote') === undefined;
  /** Writes the kept content into the file in place from byte 0 on, over `fd`, and its modification time back; true once the file holds it all (false: it holds something else). */
  async function fill(fd: number, from: Pinned): Promise<boolean> {
    const source = openFd(from.selfPath(), O_RDONLY | O_NONBLOCK);
    try {
      if (!(await completeFrom(fd, { kind: 'file', fd: source }))) return false;
    } finally {
      release(source);
    }
    const mtime = record.held.mtimeMs;
    if (mtime !== undefined) {
      try {
        futimesSync(fd, Date.now() / 1000, mtime / 1000);
      } catch (err) {
        // Only the file's owner may set its times: another user's file keeps the time of the undo.
        if (errnoCode(err) !== 'EPERM') throw err;
      }
    }
    return true;
  }
  return {
    // The file holds the kept content again; or an undo begun here (its mark, there only while it writes) was cut while writing it back, and is finished.
    async back() {
      if (copy === null || target.stats === null || !target.stats.isFile() || copy.stats === null || copy.parent === null || !isTheFile()) return false;
      const begun = (await lstat(procPath(copy.parent, UNDOING_NAME)).catch(() => undefined)) !== undefined;
      if (!begun && target.stats.size !== copy.stats.size) return false;
      const fd = openFd(target.selfPath(), O_RDWR | O_NONBLOCK);
      try {
        if (!(await fill(fd, copy))) return false;
      } finally {
        release(fd);
      }
      await unlink(procPath(copy.parent, UNDOING_NAME)).catch(() => undefined);
      return true;
    },

    async check() {
      mustBeAFile(target, 'write');
      mustBeTheFile(target, file, record.held.links, t, 'wrote', 'nothing was put back');
      if ((await digestOf(c, target)) !== change.after) throw new ToolRefusal(`${target.path} changed after the write (its content is not what the write left); nothing was put back`);
      if (copy === null || copy.stats === null || !copy.stats.isFile()) throw new ToolRefusal(`what ${callOf(t)} kept of ${target.path} is no longer in ${record.root}'s holding folder; nothing can be put back`);
      const kept = record.held.digest === null ? (copy.stats.size === record.held.bytes ? undefined : 'its size') : (await digestOf(c, copy)) === record.held.digest ? undefined : 'its content';
      if (kept !== undefined) throw new ToolRefusal(`what airlock keeps for ${callOf(t)} was changed (${kept}); nothing was put back`);
    },

    async undo() {
      if (copy === null || copy.parent === null) throw new ToolRefusal(`what ${callOf(t)} kept is no longer there`);
      // In place, as the write was: the file keeps its inode, owner, permissions and attributes, and programs that have it open see it.
      const fd = openFd(target.selfPath(), O_RDWR | O_NONBLOCK);
      try {
        // Claimed once: another undo of the same call that began first is not raced.
        try {
          release(openFd(procPath(copy.parent, UNDOING_NAME), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600));
        } catch (err) {
          if (errnoCode(err) === 'EEXIST') throw new ToolRefusal(`another undo of ${callOf(t)} began putting ${target.path} back; nothing more was done`);
          throw err;
        }
        await truncateFd(fd);
        const whole = await fill(fd, copy);
        // Done (or given up): a file someone changes after this is never taken for a part of this undo.
        await unlink(procPath(copy.parent, UNDOING_NAME)).catch(() => undefined);
        if (!whole) throw new ToolRefusal(`${target.path} changed while its content was being put back`);
      } finally {
        release(fd);
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
      return stats !== null && stats.isFile() && notTheFile(target, change, record.held.links, t, 'appended to') === undefined && stats.size === change.size && (await digestOf(c, target)) === record.held.digest;
    },

    async check() {
      mustBeAFile(target, 'append');
      mustBeTheFile(target, change, record.held.links, t, 'appended to', 'nothing was cut');
      if ((await digestOf(c, target)) !== change.after) throw new ToolRefusal(`${target.path} changed after the append (its content is not what the append left); nothing was cut`);
    },

    async undo() {
      // The descriptor's magic link: the inode that was checked, still as long as when it was checked (an append since is not cut).
      const fd = openFd(target.selfPath(), O_WRONLY | O_NONBLOCK);
      try {
        if (fstatFd(fd).size !== target.stats?.size) throw new ToolRefusal(`${target.path} changed while it was being cut back; nothing was cut`);
        await truncateFd(fd, change.size);
      } finally {
        release(fd);
      }
      return `took the appended bytes off ${target.path} (back to ${change.size} bytes)`;
    },
  };
}
