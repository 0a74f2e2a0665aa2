import { createHash } from 'node:crypto';
import type { Stats } from 'node:fs';
import { lstat, opendir, readdir, rmdir, unlink } from 'node:fs/promises';
import { ToolRefusal } from '../fs/roots';
import { errnoCode, fstatFd, O_DIRECTORY, O_NOFOLLOW, O_PATH, openFd, procPath, release } from '../fs/descriptors';
import { confirmInside } from '../fs/pinned-path';

/**
 * Folders below a pinned folder, walked by descriptors without following
 * links: the recursive digest a reviewer approves, and recursive delete.
 */

/** Past these a folder cannot be observed exactly; it is refused, never digested in part. */
export const MAX_TREE_ENTRIES = 100_000;
export const MAX_TREE_DEPTH = 64;

export interface TreeLimits {
  readonly entries: number;
  readonly depth: number;
}
export const DEFAULT_TREE_LIMITS: TreeLimits = { entries: MAX_TREE_ENTRIES, depth: MAX_TREE_DEPTH };

/** Entries stat'ed at once within one folder. */
const STAT_BATCH = 64;

export class TreeTooLarge extends ToolRefusal {
  override name = 'TreeTooLarge';
  constructor(
    readonly path: string,
    readonly limit: 'entries' | 'depth',
    readonly max: number,
  ) {
    super(
      limit === 'entries'
        ? `${path} holds more than ${max} entries below it, too many to observe exactly; act on smaller folders`
        : `${path} has folders nested more than ${max} deep, too deep to observe exactly; act on smaller folders`,
    );
  }
}

export type EntryType = 'file' | 'directory' | 'symlink' | 'other';

export function entryType(stats: Stats): EntryType {
  if (stats.isFile()) return 'file';
  if (stats.isDirectory()) return 'directory';
  if (stats.isSymbolicLink()) return 'symlink';
  return 'other';
}

async function lstatOrGone(path: string): Promise<Stats | undefined> {
  try {
    return await lstat(path);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return undefined;
    throw err;
  }
}

/** The folder `name` in `dir`, not through a link; null when it is gone or no longer a folder. */
function openFolder(dir: number, name: string): number | null {
  try {
    return openFd(procPath(dir, name), O_PATH | O_DIRECTORY | O_NOFOLLOW);
  } catch (err) {
    const code = errnoCode(err);
    if (code === 'ENOENT' || code === 'ENOTDIR' || code === 'ELOOP') return null;
    throw err;
  }
}

/**
 * Visits every entry below the folder `dirFd` holds (`path` inside `root`),
 * depth first. Refuses with TreeTooLarge as soon as a limit is passed.
 */
export async function walkTree(
  dirFd: number,
  path: string,
  root: string,
  limits: TreeLimits,
  visit: (rel: string, stats: Stats) => void,
): Promise<void> {
  let count = 0;
  const walk = async (fd: number, rel: string, depth: number): Promise<void> => {
    const names: string[] = [];
    for await (const entry of await opendir(procPath(fd))) {
      if (depth > limits.depth) throw new TreeTooLarge(path, 'depth', limits.depth);
      if (++count > limits.entries) throw new TreeTooLarge(path, 'entries', limits.entries);
      names.push(entry.name);
    }
    for (let i = 0; i < names.length; i += STAT_BATCH) {
      const batch = names.slice(i, i + STAT_BATCH);
      const seen = await Promise.all(batch.map((name) => lstatOrGone(procPath(fd, name))));
      for (const [j, name] of batch.entries()) {
        const stats = seen[j];
        if (stats === undefined) continue;
        const childRel = rel === '' ? name : `${rel}/${name}`;
        const child = stats.isDirectory() ? openFolder(fd, name) : null;
        if (child === null) {
          visit(childRel, stats);
          continue;
        }
        try {
          confirmInside(child, root, path);
          // What is walked is what is recorded, even if the name changed since the lstat.
          visit(childRel, fstatFd(child));
          await walk(child, childRel, depth + 1);
        } finally {
          release(child);
        }
      }
    }
  };
  await walk(dirFd, '', 1);
}

export interface TreeDigest {
  /** Entries below, recursively. */
  readonly entries: number;
  /** Regular files among them. */
  readonly files: number;
  /** Sum of the sizes of the regular files below. */
  readonly bytes: number;
  /** sha256 over the sorted (relative path, type, size, mtime, inode) of every entry below. */
  readonly sha256: string;
}

export async function digestTree(dirFd: number, path: string, root: string, limits: TreeLimits): Promise<TreeDigest> {
  const lines: Array<[string, string]> = [];
  let bytes = 0;
  let files = 0;
  await walkTree(dirFd, path, root, limits, (rel, stats) => {
    if (stats.isFile()) {
      bytes += stats.size;
      files++;
    }
    lines.push([rel, JSON.stringify([rel, entryType(stats), stats.size, stats.mtimeMs, stats.ino])]);
  });
  lines.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const hash = createHash('sha256');
  for (const [, line] of lines) hash.update(`${line}\n`);
  return { entries: lines.length, files, bytes, sha256: hash.digest('hex') };
}

/**
 * Deletes everything below the folder `dirFd` holds: each entry is opened
 * without following links and removed by name from its pinned folder, so a
 * link is removed, never followed.
 */
export async function removeContents(dirFd: number, path: string, root: string, limits: TreeLimits, depth = 1): Promise<void> {
  const names = await readdir(procPath(dirFd));
  if (depth > limits.depth && names.length > 0) throw new TreeTooLarge(path, 'depth', limits.depth);
  for (const name of names) {
    const entry = procPath(dirFd, name);
    const stats = await lstatOrGone(entry);
    if (stats === undefined) continue;
    const child = stats.isDirectory() ? openFolder(dirFd, name) : null;
    if (child === null) {
      await unlink(entry).catch((err: unknown) => {
        if (errnoCode(err) !== 'ENOENT') throw err;
      });
      continue;
    }
    try {
      confirmInside(child, root, path);
      await removeContents(child, path, root, limits, depth + 1);
    } finally {
      release(child);
    }
    await rmdir(entry);
  }
}
