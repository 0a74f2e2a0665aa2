import { chmod } from 'node:fs/promises';
import { ToolRefusal } from '../../core/tools/tool-refusal';
import { modeText, observePinned } from './observe';
import { callOf, namesChanged, sameFile, type ChangeOf, type ChangeUndo, type UndoContext } from './restore-context';

/**
 * Undo of a mode change: the mode before goes back on the very inode the
 * change set it on, only while it still has the mode that was set and the
 * names (hard links) it had.
 * Set-id and sticky bits go back only onto the content they were on.
 */
export function modeUndo(c: UndoContext, change: ChangeOf<'mode'>): ChangeUndo {
  const { record, target, t } = c;
  const digestNow = async () => {
    const seen = await observePinned(target, { follow: false, ...(c.hashLimitBytes !== undefined ? { hashLimitBytes: c.hashLimitBytes } : {}) });
    return seen.exists ? seen.sha256 : null;
  };
  return {
    // Back with or without the set-id and sticky bits it had (those go back only onto unchanged content).
    async back() {
      const stats = target.stats;
      if (stats === null || !sameFile(stats, change) || namesChanged(stats, record.held.links) !== undefined) return false;
      const now = modeText(stats);
      return now === record.held.mode || (now !== change.after && (stats.mode & 0o777) === (Number.parseInt(record.held.mode, 8) & 0o777));
    },

    async check() {
      const stats = target.stats;
      if (stats === null) throw new ToolRefusal(`${target.path} is not there now; nothing to put its mode back on`);
      if (stats.isSymbolicLink()) throw new ToolRefusal(`${target.path} is a symbolic link now; refusing to change a link's target`);
      if (!sameFile(stats, change)) throw new ToolRefusal(`${target.path} is another file than the one ${callOf(t)} changed (replaced since); its mode was not changed`);
      const names = namesChanged(stats, record.held.links);
      if (names !== undefined) throw new ToolRefusal(`${target.path} ${names}; its mode was not changed`);
      if (modeText(stats) !== change.after) throw new ToolRefusal(`the mode of ${target.path} is ${modeText(stats)} now, not the ${change.after} ${callOf(t)} set (changed again since); its mode was not changed`);
    },

    async undo() {
      const before = Number.parseInt(record.held.mode, 8) & 0o7777;
      // A file written since gets its permission bits alone.
      const special = (before & 0o7000) === 0 || record.held.type === 'directory' || (record.held.digest !== null && (await digestNow()) === record.held.digest);
      const mode = special ? before : before & 0o777;
      // The descriptor's magic link: the inode that was checked, never a link's target.
      await chmod(target.selfPath(), mode);
      return `put the mode of ${target.path} back to ${mode.toString(8).padStart(3, '0')}${special ? '' : ' (not its set-id or sticky bits: its content changed since)'}`;
    },
  };
}
