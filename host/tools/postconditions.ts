import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import type { ObservedState } from '../../core/observed-state';
import type { Roots } from '../roots';
import { ErrnoError, fstatFd, O_NONBLOCK, O_RDONLY, openFd, release } from './descriptors';
import { observe } from './observe';
import { pin } from './pinned-path';

/**
 * "Did my effect happen?" for each changing tool, read from the real target
 * through the same pinned descriptors the tools act through. A retried
 * `execute` asks this when the attempt that consumed the nonce never
 * recorded its outcome.
 */
export interface Postcondition {
  readonly present: boolean;
  /** What the target shows, for the model, `show` and the log. */
  readonly detail: string;
}

const sha256 = (text: string) => createHash('sha256').update(text, 'utf8').digest('hex');

/** sha256 of the first `length` bytes and the last `tail` bytes of a file, read through its pinned descriptor. */
async function readParts(path: string, length: number, tail: number): Promise<{ prefix: string; tail: Buffer; size: number }> {
  const fd = openFd(path, O_RDONLY | O_NONBLOCK);
  try {
    const size = fstatFd(fd).size;
    const hash = createHash('sha256');
    if (length > 0) for await (const chunk of createReadStream('', { fd, start: 0, end: length - 1, autoClose: false })) hash.update(chunk as Buffer);
    const last: Buffer[] = [];
    if (tail > 0 && size >= tail) for await (const chunk of createReadStream('', { fd, start: size - tail, end: size - 1, autoClose: false })) last.push(chunk as Buffer);
    return { prefix: hash.digest('hex'), tail: Buffer.concat(last), size };
  } finally {
    release(fd);
  }
}

/** Appended exactly once: the earlier bytes unchanged (their digest), then the content, nothing else. */
async function appended(roots: Roots, path: string, content: string, before: ObservedState): Promise<Postcondition> {
  if (!before.exists || before.type !== 'file' || before.sha256 === null) {
    return { present: false, detail: `${path}: cannot tell an append from the file's earlier state` };
  }
  let target;
  try {
    target = pin(roots, path, { follow: false });
  } catch (err) {
    if (err instanceof ErrnoError) return { present: false, detail: `${path} no longer exists` };
    throw err;
  }
  try {
    if (target.stats === null || !target.stats.isFile()) return { present: false, detail: `${path} is no longer a regular file` };
    const added = Buffer.from(content, 'utf8');
    if (target.stats.size !== before.size + added.length) {
      return { present: false, detail: `${path} is ${target.stats.size} bytes (${before.size} before, ${before.size + added.length} with the append)` };
    }
    const parts = await readParts(target.selfPath(), before.size, added.length);
    const present = parts.prefix === before.sha256 && parts.tail.equals(added);
    return { present, detail: present ? `${path} ends with the appended ${added.length} bytes once` : `${path} does not hold the earlier content followed by the append` };
  } finally {
    target.close();
  }
}

/** Checks the effect of one call; `before` holds its targets as they were right before it (by position), when known. */
export async function checkPostcondition(
  roots: Roots,
  toolName: string,
  args: Readonly<Record<string, unknown>>,
  before: readonly ObservedState[] | undefined,
): Promise<Postcondition> {
  const path = typeof args.path === 'string' ? args.path : '';
  const look = (p: string, hash: boolean) => observe(roots, p, { follow: false, hashLimitBytes: hash ? undefined : 0 });
  switch (toolName) {
    case 'fs_delete': {
      // Nothing was there to delete: the call could only have failed, so its effect is not "present".
      if (before?.[0]?.exists === false) return { present: false, detail: `${before[0].path} did not exist before the call` };
      const now = await look(path, false);
      return now.exists ? { present: false, detail: `${now.path} still exists` } : { present: true, detail: `${now.path} is gone` };
    }
    case 'fs_write': {
      const content = typeof args.content === 'string' ? args.content : '';
      const prior = before?.[0];
      if (args.mode === 'append' && prior !== undefined && prior.exists) return appended(roots, path, content, prior);
      if (args.mode === 'create' && prior?.exists === true) return { present: false, detail: `${prior.path} existed before the call, so creating it could only fail` };
      if (args.mode === 'append' && prior === undefined) return { present: false, detail: `${path}: cannot tell an append without the file's earlier state` };
      // create, overwrite, and an append to a file that did not exist: the file holds exactly the content.
      const now = await look(path, true);
      const intended = sha256(content);
      if (!now.exists) return { present: false, detail: `${now.path} does not exist` };
      const present = now.type === 'file' && now.sha256 === intended;
      return { present, detail: present ? `${now.path} holds the intended content (sha256 ${intended.slice(0, 16)}…)` : `${now.path} does not hold the intended content` };
    }
    case 'fs_move': {
      const from = typeof args.from === 'string' ? args.from : '';
      const to = typeof args.to === 'string' ? args.to : '';
      const source = before?.[0];
      const [fromNow, toNow] = [await look(from, false), await look(to, true)];
      if (source === undefined || !source.exists) return { present: false, detail: `${from}: cannot tell a move without the source's earlier state` };
      if (fromNow.exists) return { present: false, detail: `${fromNow.path} is still there` };
      // rename keeps the inode: the destination is the very entry that was the source.
      // A file keeps its mtime too (a new file with a reused inode number would not); a moved folder's changes with its parent link.
      const same =
        toNow.exists &&
        toNow.dev === source.dev &&
        toNow.ino === source.ino &&
        toNow.type === source.type &&
        (source.sha256 === null || toNow.sha256 === source.sha256) &&
        (source.type === 'directory' || toNow.mtimeMs === source.mtimeMs);
      return same
        ? { present: true, detail: `${fromNow.path} is gone and ${toNow.path} is the moved entry (same inode${source.sha256 !== null ? ' and sha256' : ''})` }
        : { present: false, detail: `${fromNow.path} is gone but ${toNow.path} is not the moved entry` };
    }
    case 'fs_chmod': {
      const mode = typeof args.mode === 'string' ? Number.parseInt(args.mode, 8) & 0o777 : -1;
      const now = await look(path, false);
      if (!now.exists || now.type === 'symlink') return { present: false, detail: `${now.path} ${now.exists ? 'is a symbolic link' : 'does not exist'}` };
      const prior = before?.[0];
      if (prior !== undefined && prior.exists && (prior.dev !== now.dev || prior.ino !== now.ino)) return { present: false, detail: `${now.path} was replaced by another file` };
      const present = (Number.parseInt(now.mode, 8) & 0o777) === mode;
      return { present, detail: `${now.path} has mode ${now.mode}` };
    }
    default:
      return { present: false, detail: `${toolName} declares no postcondition` };
  }
}
