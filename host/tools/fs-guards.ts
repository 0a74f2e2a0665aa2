import { randomBytes } from 'node:crypto';
import { link, unlink } from 'node:fs/promises';
import type { z } from 'zod';
import { truncate } from '../../core/redaction/masking';
import type { ToolOutcome } from '../../core/tools/outcome';
import { ErrnoError, O_APPEND, O_CREAT, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_WRONLY, errnoCode, inside, messageOf, openFd, procPath, release, writeAll } from '../fs/descriptors';
import { type Pinned } from '../fs/pinned-path';
import { type Roots, ToolRefusal } from '../fs/roots';

/** What every file tool checks before it touches a path, and how it opens or creates what it writes. */

export const NEW_FILE_PREFIX = '.airlock-new-';

export const MAX_OUTPUT_CHARS = 16_000;
export const MAX_LIST_ENTRIES = 500;

export type Args<T extends { parameters: z.ZodType }> = z.output<T['parameters']>;

export function errnoMessage(err: unknown, path: string): string {
  const code = errnoCode(err);
  switch (code) {
    case 'ENOENT':
      return `no such file or directory: ${path}`;
    case 'EEXIST':
      return `already exists: ${path}`;
    case 'ENOTDIR':
      return `not a directory: ${path}`;
    case 'EISDIR':
      return `is a directory: ${path}`;
    case 'ENOTEMPTY':
      return `directory not empty: ${path} (set recursive to delete it with its contents)`;
    case 'EACCES':
    case 'EPERM':
      return `permission denied: ${path}`;
    case 'EXDEV':
      return `cannot move across file systems: ${path}`;
    default:
      return `${code ?? 'error'}: ${messageOf(err)}`;
  }
}

export async function guarded(path: string, run: () => Promise<string>): Promise<ToolOutcome> {
  try {
    return { ok: true, output: truncate(await run(), MAX_OUTPUT_CHARS) };
  } catch (err) {
    if (err instanceof ToolRefusal) return { ok: false, output: `Refused: ${err.message}` };
    return { ok: false, output: `Error: ${errnoMessage(err, path)}` };
  }
}

/** The checks every changing tool makes on its target: never a root, never a final link. */
export function mutable(target: Pinned, input: string, verb: string): void {
  if (target.isRoot) throw new ToolRefusal(`refusing to ${verb} an allowed root itself (${target.path})`);
  if (target.stats?.isSymbolicLink() === true) {
    throw new ToolRefusal(`${input} is a symbolic link; refusing to ${verb} it (name the path it points to instead)`);
  }
}

/**
 * A folder holding another allowed root is not moved or deleted: the inner
 * root (and its holding folder of undo entries) would go with it, or land
 * where it is no longer a root.
 */
export function wholeRoots(roots: Roots, target: Pinned, input: string, verb: string): void {
  const inner = roots.real.find((root) => root !== target.path && inside(target.path, root));
  if (inner !== undefined) throw new ToolRefusal(`${input} holds the allowed root ${inner}; refusing to ${verb} it`);
}

export function existing(target: Pinned): NonNullable<Pinned['stats']> {
  if (target.stats === null) throw new ErrnoError('ENOENT', target.path);
  return target.stats;
}

/**
 * A new file appears whole or not at all: its content goes into a
 * temporary name in the same pinned folder, which is then linked to the
 * file's name (a link refuses a name that exists, as creating does) and
 * dropped. A worker killed part way leaves the name absent, or holding all
 * of the content, never an empty or cut file, so a retry can tell whether
 * the call ran. What a kill can leave is the temporary file
 * (`.airlock-new-…`) beside it.
 */
export async function createWhole(target: Pinned, content: Buffer, midWrite: (() => Promise<void>) | undefined): Promise<void> {
  // Refuses a root itself, which has no folder to create in.
  const name = target.entryPath();
  const folder = target.parent;
  if (folder === null) throw new ErrnoError('EEXIST', target.path);
  const temp = procPath(folder, `${NEW_FILE_PREFIX}${randomBytes(8).toString('hex')}`);
  try {
    const fd = openFd(temp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_NONBLOCK, 0o666);
    try {
      const half = midWrite === undefined ? content.length : content.length >> 1;
      await writeAll(fd, content.subarray(0, half));
      await midWrite?.();
      await writeAll(fd, content.subarray(half));
    } finally {
      release(fd);
    }
    await link(temp, name);
  } finally {
    await unlink(temp).catch(() => undefined);
  }
}

/** Opens the checked, existing file itself for writing (its permission checked before anything is kept for undo); an overwrite truncates it after. */
export function openForWrite(target: Pinned, input: string, mode: 'create' | 'overwrite' | 'append'): number {
  if (target.stats === null) throw new ErrnoError('ENOENT', target.path);
  if (!target.stats.isFile()) throw new ToolRefusal(`${input} exists and is not a regular file`);
  if (mode === 'create') throw new ErrnoError('EEXIST', target.path);
  return openFd(target.selfPath(), O_WRONLY | O_NONBLOCK | (mode === 'append' ? O_APPEND : 0));
}

/** The file operations behind the fs_* tool modules (see file-host.ts), each acting through pinned descriptors. */
