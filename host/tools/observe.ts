import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { lstat, readdir } from 'node:fs/promises';
import type { ObservedState } from '../../core/observed-state';

/** Files up to this size get a sha256 in their observed state. */
export const DEFAULT_HASH_LIMIT_BYTES = 64 * 1024 * 1024;

async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** What is at `path` now, without following a final symlink. */
export async function observe(path: string, hashLimitBytes = DEFAULT_HASH_LIMIT_BYTES): Promise<ObservedState> {
  let info;
  try {
    info = await lstat(path);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT' || (err as NodeJS.ErrnoException).code === 'ENOTDIR') {
      return { path, exists: false };
    }
    throw err;
  }
  const type = info.isFile() ? 'file' : info.isDirectory() ? 'directory' : info.isSymbolicLink() ? 'symlink' : 'other';
  return {
    path,
    exists: true,
    type,
    size: info.size,
    mtimeMs: info.mtimeMs,
    mode: (info.mode & 0o7777).toString(8).padStart(3, '0'),
    dev: info.dev,
    ino: info.ino,
    sha256: type === 'file' && info.size <= hashLimitBytes ? await sha256File(path) : null,
    entries: type === 'directory' ? (await readdir(path)).length : null,
  };
}
