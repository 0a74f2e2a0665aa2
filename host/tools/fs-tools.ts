import { chmod, link, lstat, readdir, rename, rmdir, unlink } from 'node:fs/promises';
import type { fsChmod } from '../../core/tools/fs/fs-chmod';
import type { fsDelete } from '../../core/tools/fs/fs-delete';
import type { fsList } from '../../core/tools/fs/fs-list';
import type { fsMove } from '../../core/tools/fs/fs-move';
import type { fsRead } from '../../core/tools/fs/fs-read';
import type { fsStat } from '../../core/tools/fs/fs-stat';
import type { fsWrite } from '../../core/tools/fs/fs-write';
import { isHoldingFolder } from '../../core/tools/fs/holding-folder';
import type { ToolOutcome } from '../../core/tools/outcome';
import type { HoldSlot, KeptKind, Reversibility } from '../../core/tools/undo';
import { ErrnoError, O_NONBLOCK, O_RDONLY, errnoCode, fstatFd, openFd, readAt, release, truncateFd, writeAll } from '../fs/descriptors';
import { withPinned } from '../fs/pinned-path';
import { type Roots, ToolRefusal } from '../fs/roots';
import type { UndoRecords } from '../stores/nonces/undo-records';
import { WRITING_NAME, clearCallFolder, mark } from './call-folder';
import { type Args, MAX_LIST_ENTRIES, createWhole, existing, guarded, mutable, openForWrite, wholeRoots } from './fs-guards';
import { appendable, holdAppend, holdMode, holdMove, holdReplace, movesKeptIn, replaceable } from './hold-changes';
import { holdEntry } from './holding';
import { DEFAULT_HASH_LIMIT_BYTES, observePinned } from './observe';
import { DEFAULT_TREE_LIMITS, type TreeLimits, removeContents, walkTree } from './tree';
import { type UndoSettings, overQuota, reversibilityOf } from './undo-settings';

export type { ToolOutcome };

export interface FsToolOptions {
  /** Recursive deletes refuse folders past these, as approvals do. */
  readonly treeLimits?: TreeLimits;
  /** The roots whose changes are kept for undo (tools config `undo`); unset: none. */
  readonly undo?: UndoSettings;
  /** What the roots keep for undo now (their quota counts it); unset: no quota is applied. */
  readonly undoRecords?: Pick<UndoRecords, 'heldBytes'>;
  /** Files up to this size are digested; an append is kept for undo only while the file stays within it. */
  readonly hashLimitBytes?: number;
  /** TEST ONLY: called once half of a write's content is written (a new file's into its temporary file, before it takes its name; an existing file's in place), before the rest. */
  readonly midWrite?: () => Promise<void>;
  /** TEST ONLY: called after `fs_move` checked its destination and before it moves (where another process could create it). */
  readonly beforeMove?: () => Promise<void>;
}

/** The temporary name a new file is written under, in the folder it is created in. */
export function createFsTools(roots: Roots, options: FsToolOptions = {}) {
  const limits = options.treeLimits ?? DEFAULT_TREE_LIMITS;
  // Reads follow a final link (re-pinned from a root); changes act on the name itself.
  const reading = { follow: true };
  const changing = { follow: false };

  return {
    fs_list: (a: Args<typeof fsList>) =>
      guarded(a.path, () =>
        withPinned(roots, a.path, reading, async (target) => {
          if (!existing(target).isDirectory()) throw new ErrnoError('ENOTDIR', target.path);
          const folder = target.selfPath();
          // A root's holding folder is airlock's, not the model's: not listed.
          const entries = (await readdir(folder, { withFileTypes: true })).filter((e) => !isHoldingFolder(e.name, target.isRoot));
          entries.sort((x, y) => (x.name < y.name ? -1 : 1));
          const lines = await Promise.all(
            entries.slice(0, MAX_LIST_ENTRIES).map(async (e) => {
              if (e.isDirectory()) return `${e.name}/`;
              if (e.isSymbolicLink()) return `${e.name} -> (link)`;
              const info = await lstat(`${folder}/${e.name}`).catch(() => undefined);
              return `${e.name} (${info?.size ?? '?'} bytes)`;
            }),
          );
          const more = entries.length > MAX_LIST_ENTRIES ? `\n… ${entries.length - MAX_LIST_ENTRIES} more entries` : '';
          return `${target.path}: ${entries.length} entries\n${lines.join('\n')}${more}`;
        }),
      ),

    fs_read: (a: Args<typeof fsRead>) =>
      guarded(a.path, () =>
        withPinned(roots, a.path, reading, async (target) => {
          if (!existing(target).isFile()) throw new ToolRefusal(`${a.path} is not a regular file`);
          const fd = openFd(target.selfPath(), O_RDONLY | O_NONBLOCK);
          try {
            const size = fstatFd(fd).size;
            const buffer = Buffer.alloc(Math.min(a.maxBytes, size));
            const bytesRead = await readAt(fd, buffer);
            const text = buffer.subarray(0, bytesRead).toString('utf8');
            return size > bytesRead ? `${text}\n[truncated: ${size - bytesRead} more bytes]` : text;
          } finally {
            release(fd);
          }
        }),
      ),

    fs_stat: (a: Args<typeof fsStat>) =>
      guarded(a.path, () =>
        withPinned(roots, a.path, reading, async (target) => {
          const seen = await observePinned(target, { follow: true, hashLimitBytes: 0 });
          if (!seen.exists) return JSON.stringify({ path: seen.path, exists: false });
          return JSON.stringify({
            path: seen.path,
            exists: true,
            type: seen.type,
            size: seen.size,
            mode: seen.mode,
            modified: new Date(seen.mtimeMs).toISOString(),
            ...(seen.entries !== null ? { entries: seen.entries } : {}),
          });
        }),
      ),

    fs_write: (a: Args<typeof fsWrite>, hold?: HoldSlot) =>
      guarded(a.path, () =>
        withPinned(roots, a.path, changing, async (target) => {
          mutable(target, a.path, 'write');
          const content = Buffer.from(a.content, 'utf8');
          const wrote = `wrote ${content.length} bytes to ${target.path} (${a.mode})`;
          const kept = ` (the content before is kept for ${options.undo?.keepDays ?? 0} days: airlock undo puts it back)`;
          if (target.stats === null) {
            await createWhole(target, content, options.midWrite);
            return wrote;
          }
          const fd = openForWrite(target, a.path, a.mode);
          try {
            // Kept for undo: a copy of the content before an overwrite, or the length before an append.
            const keptForUndo =
              hold !== undefined &&
              (a.mode === 'overwrite'
                ? await holdReplace(target, options.undo, hold, content, options.undoRecords)
                : await holdAppend(target, options.undo, hold, content, options.hashLimitBytes ?? DEFAULT_HASH_LIMIT_BYTES));
            // While the file is being changed, and only then, a retry after a kill may finish what it holds part of.
            if (keptForUndo) await mark(target.root, hold.key, WRITING_NAME, true);
            if (a.mode === 'overwrite') await truncateFd(fd);
            const half = options.midWrite === undefined ? content.length : content.length >> 1;
            await writeAll(fd, content.subarray(0, half));
            await options.midWrite?.();
            await writeAll(fd, content.subarray(half));
            if (keptForUndo) await mark(target.root, hold.key, WRITING_NAME, false);
            return keptForUndo ? `${wrote}${kept}` : wrote;
          } finally {
            release(fd);
          }
        }),
      ),

    fs_move: (a: Args<typeof fsMove>, hold?: HoldSlot) =>
      guarded(a.from, () =>
        withPinned(roots, a.from, changing, (from) =>
          withPinned(roots, a.to, changing, async (to) => {
            mutable(from, a.from, 'move');
            wholeRoots(roots, from, a.from, 'move');
            if (to.isRoot) throw new ToolRefusal(`refusing to replace an allowed root itself (${to.path})`);
            existing(from);
            if (to.stats !== null) {
              if (to.stats.isSymbolicLink()) throw new ToolRefusal(`${a.to} is a symbolic link; refusing to replace it`);
              if (!a.overwrite) throw new ToolRefusal(`${a.to} already exists (set overwrite to replace it)`);
              if (to.stats.isDirectory()) throw new ToolRefusal(`${a.to} is a directory; refusing to replace it`);
            }
            // Kept for undo: which entry moves, and the file it replaces under a second name.
            const kept = hold !== undefined && (await holdMove(from, to, options.undo, hold, options.undoRecords));
            const moved = `moved ${from.path} to ${to.path}${kept ? ` (kept for ${options.undo?.keepDays ?? 0} days: airlock undo moves it back${to.stats !== null ? ' and puts back the file it replaced' : ''})` : ''}`;
            await options.beforeMove?.();
            const source = existing(from);
            if (!a.overwrite && !source.isDirectory()) {
              const appeared = () => new ToolRefusal(`${a.to} appeared after it was checked; nothing was moved or replaced`);
              // Never replaces: link(2) refuses a name that exists now, not only one that existed at the check.
              try {
                await link(from.entryPath(), to.entryPath());
              } catch (err) {
                if (errnoCode(err) === 'EEXIST') throw appeared();
                // File systems and settings that refuse hard links (vfat, some network mounts, protected_hardlinks): a rename right after a fresh look, as before.
                if (!['EPERM', 'EXDEV', 'ENOTSUP', 'EOPNOTSUPP', 'EMLINK', 'ENOSYS'].includes(errnoCode(err) ?? '')) throw err;
                if ((await lstat(to.entryPath()).catch(() => undefined)) !== undefined) throw appeared();
                await rename(from.entryPath(), to.entryPath());
                return moved;
              }
              // The old name goes only while it is still the file that was checked; otherwise the new name is taken back.
              const now = await lstat(from.entryPath()).catch(() => undefined);
              if (now === undefined || now.dev !== source.dev || now.ino !== source.ino) {
                const ours = await lstat(to.entryPath()).catch(() => undefined);
                if (ours !== undefined && ours.dev === source.dev && ours.ino === source.ino) await unlink(to.entryPath()).catch(() => undefined);
                throw new ToolRefusal(`${a.from} was replaced while it was being moved; nothing was moved`);
              }
              await unlink(from.entryPath());
              return moved;
            }
            // rename acts on the two names in their pinned folders and follows neither; a folder can only ever replace an empty folder.
            await rename(from.entryPath(), to.entryPath());
            return moved;
          }),
        ),
      ),

    fs_delete: (a: Args<typeof fsDelete>, hold?: HoldSlot) =>
      guarded(a.path, () =>
        withPinned(roots, a.path, changing, async (target) => {
          mutable(target, a.path, 'delete');
          wholeRoots(roots, target, a.path, 'delete');
          const info = existing(target);
          // A rename would move a full folder aside; rmdir refuses it, and so does a held delete.
          if (hold !== undefined && info.isDirectory() && !a.recursive && (await readdir(target.selfPath())).length > 0) throw new ErrnoError('ENOTEMPTY', target.path);
          // Kept for undo: the whole entry moves aside in one rename, whatever its size.
          if (hold !== undefined && (await holdEntry(target, options.undo, hold, options.undoRecords))) return `deleted ${target.path} (kept for ${options.undo?.keepDays ?? 0} days: airlock undo restores it)`;
          if (!info.isDirectory()) await unlink(target.entryPath());
          else if (!a.recursive) await rmdir(target.entryPath());
          else {
            const fd = target.descriptor();
            // Refuse a tree past the limits before removing anything of it.
            await walkTree(fd, target.path, target.root, limits, () => undefined);
            await removeContents(fd, target.path, target.root, limits);
            await rmdir(target.entryPath());
          }
          return `deleted ${target.path}`;
        }),
      ),

    fs_chmod: (a: Args<typeof fsChmod>, hold?: HoldSlot) =>
      guarded(a.path, () =>
        withPinned(roots, a.path, changing, async (target) => {
          mutable(target, a.path, 'change the mode of');
          existing(target);
          const mode = Number.parseInt(a.mode, 8) & 0o777;
          // Kept for undo: what it will set, on which inode, before it sets it (the mode before is in the record).
          const kept = hold !== undefined && (await holdMode(target, options.undo, hold, mode.toString(8).padStart(3, '0')));
          try {
            // chmod of the descriptor's magic link: the inode that was checked, never a link's target.
            await chmod(target.selfPath(), mode);
          } catch (err) {
            // Nothing changed: nothing to undo.
            if (kept && hold !== undefined) await clearCallFolder(target.root, hold.key);
            throw err;
          }
          return `changed mode of ${target.path} to ${a.mode}${kept ? ` (the mode before is kept for ${options.undo?.keepDays ?? 0} days: airlock undo restores it)` : ''}`;
        }),
      ),
  };
}

export type FsTools = ReturnType<typeof createFsTools>;

/**
 * Whether a change at `path` can be kept for undo now: its root set up for
 * it, the same file system, what the change keeps possible for this entry
 * (`kind`), and `bytes` more within the root's quota.
 */
export function reversibilityAt(
  roots: Roots,
  undo: UndoSettings | undefined,
  path: string,
  ask: { readonly records?: Pick<UndoRecords, 'heldBytes'>; readonly bytes?: number; readonly kind?: KeptKind; readonly hashLimitBytes?: number } = {},
): Promise<Reversibility> {
  return withPinned(roots, path, { follow: false }, async (target) => {
    const can = reversibilityOf(target, undo);
    if (!can.reversible || undo === undefined) return can;
    const kind = ask.kind ?? { kind: 'move_aside' };
    const cannot =
      kind.kind === 'replace'
        ? replaceable(target)
        : kind.kind === 'append'
          ? appendable(target, kind.adds, ask.hashLimitBytes ?? DEFAULT_HASH_LIMIT_BYTES)
          : kind.kind === 'move'
            ? await withPinned(roots, kind.to, { follow: false }, async (to) => {
                const there = reversibilityOf(to, undo);
                return there.reversible ? undefined : there.why;
              })
            : kind.kind === 'move_many'
              ? await movesKeptIn(roots, kind.moves, undo).then((kept) => ('why' in kept ? kept.why : undefined))
              : undefined;
    if (cannot !== undefined) return { reversible: false, why: cannot };
    // A bulk move sets nothing aside: no quota to ask.
    if (kind.kind === 'move_many') return can;
    const over = await overQuota(target.root, undo, ask.records, ask.bytes);
    return over === undefined ? can : { reversible: false, why: over };
  });
}
