import { createHash } from 'node:crypto';
import { createReadStream, type Stats } from 'node:fs';
import { opendir } from 'node:fs/promises';
import { isHoldingFolder } from '../../core/tools/fs/holding-folder';
import type { FileState, TreeState } from '../../core/tools/observed-state';
import type { Roots } from '../fs/roots';
import { ErrnoError } from '../fs/descriptors';
import { pin, type Pinned } from '../fs/pinned-path';
import { DEFAULT_TREE_LIMITS, digestTree, entryType, TreeTooLarge, type TreeLimits } from './tree';

/** Permission bits as observed states write them: "644", "4755". */
export function modeText(stats: Stats): string {
  return (stats.mode & 0o7777).toString(8).padStart(3, '0');
}

/** Files up to this size get a sha256 in their observed state. */
export const DEFAULT_HASH_LIMIT_BYTES = 64 * 1024 * 1024;

export interface ObserveOptions {
  /** Follow a final symbolic link (read tools); otherwise the link itself is observed. */
  readonly follow: boolean;
  readonly hashLimitBytes?: number;
  /** Digest folders recursively: what a reviewer approves. fs_stat skips it. */
  readonly deep?: boolean;
  readonly treeLimits?: TreeLimits;
}

/** Reads through the descriptor: the bytes hashed are those of the inode that was checked. */
async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Entries of a folder; a root's holding folder is not counted (no tool sees it). */
async function countEntries(path: string, isRoot: boolean): Promise<number> {
  let n = 0;
  for await (const entry of await opendir(path)) if (!isHoldingFolder(entry.name, isRoot)) n++;
  return n;
}

async function observeTree(target: Pinned, fd: number, limits: TreeLimits): Promise<TreeState> {
  try {
    return { complete: true, ...(await digestTree(fd, target.path, target.root, limits)) };
  } catch (err) {
    if (err instanceof TreeTooLarge) return { complete: false, reason: err.message };
    throw err;
  }
}

/** What the pinned target is now, read through its descriptors. */
export async function observePinned(target: Pinned, options: ObserveOptions): Promise<FileState> {
  if (target.fd === null || target.stats === null) return { path: target.path, exists: false };
  const info = target.stats;
  const type = entryType(info);
  const hashLimit = options.hashLimitBytes ?? DEFAULT_HASH_LIMIT_BYTES;
  const seen: FileState = {
    path: target.path,
    exists: true,
    type,
    size: info.size,
    mtimeMs: info.mtimeMs,
    mode: modeText(info),
    dev: info.dev,
    ino: info.ino,
    sha256: type === 'file' && info.size <= hashLimit ? await sha256Of(target.selfPath()) : null,
    entries: type === 'directory' ? await countEntries(target.selfPath(), target.isRoot) : null,
    // Only when there is more than one name: a state of an ordinary file stays what it always was.
    ...(type !== 'directory' && info.nlink > 1 ? { links: info.nlink } : {}),
  };
  if (type !== 'directory' || options.deep !== true) return seen;
  return { ...seen, tree: await observeTree(target, target.fd, options.treeLimits ?? DEFAULT_TREE_LIMITS) };
}

/** What is at a call's path now; a missing path (or one through a file) is seen as missing. */
export async function observe(roots: Roots, input: string, options: ObserveOptions): Promise<FileState> {
  let target: Pinned;
  try {
    target = pin(roots, input, { follow: options.follow });
  } catch (err) {
    if (err instanceof ErrnoError && (err.code === 'ENOENT' || err.code === 'ENOTDIR')) return { path: err.path, exists: false };
    throw err;
  }
  try {
    return await observePinned(target, options);
  } finally {
    target.close();
  }
}
