import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { unlink } from 'node:fs/promises';
import type { FileState } from '../../core/tools/observed-state';
import type { FileCapability, FileContents } from '../../core/tools/capabilities/files';
import type { Roots } from '../fs/roots';
import { callFacts } from '../target-facts';
import { ErrnoError, fstatFd, O_NONBLOCK, O_RDONLY, openFd, readAt, release } from '../fs/descriptors';
import { createFsTools, reversibilityAt } from './fs-tools';
import { finishCutWrite, holdMoveMany } from './hold-changes';
import { findHeld, unhold } from './holding';
import type { UndoSettings } from './undo-settings';
import { DEFAULT_HASH_LIMIT_BYTES, observe } from './observe';
import { hashPrefix } from './kept-bytes';
import { pin } from '../fs/pinned-path';
import { createRestore } from './restore';
import type { UndoRecords } from '../stores/nonces/undo-records';
import type { TreeLimits } from './tree';

export interface FileHostOptions {
  readonly hashLimitBytes?: number;
  /** Folders past these cannot be observed exactly (so calls on them are never approvable), and recursive deletes refuse them. */
  readonly treeLimits?: TreeLimits;
  /** The roots whose changes are kept for undo; unset: none. */
  readonly undo?: UndoSettings;
  /** Where reversible changes' records are (the nonce/outcome store): what `fs_undo` reads and settles; unset: nothing can be undone here. */
  readonly undoRecords?: UndoRecords;
  /** TEST ONLY: where a new file's write stops half way (see `FsToolOptions`). */
  readonly midWrite?: () => Promise<void>;
  /** TEST ONLY: called before each entry a bulk move's undo moves back. */
  readonly midUndo?: (back: number) => Promise<void>;
}

/** sha256 of the first `length` bytes and the last `tail` bytes of a file, read through its pinned descriptor. */
async function readParts(path: string, length: number, tail: number): Promise<{ prefix: string; tail: Buffer; size: number }> {
  const fd = openFd(path, O_RDONLY | O_NONBLOCK);
  try {
    const size = fstatFd(fd).size;
    const prefix = (await hashPrefix(fd, length)).digest('hex');
    const last: Buffer[] = [];
    if (tail > 0 && size >= tail) for await (const chunk of createReadStream('', { fd, start: size - tail, end: size - 1, autoClose: false })) last.push(chunk as Buffer);
    return { prefix, tail: Buffer.concat(last), size };
  } finally {
    release(fd);
  }
}

/** Appended exactly once: the earlier bytes unchanged (their digest), then the content, nothing else. */
async function appendedOnce(roots: Roots, path: string, content: string, before: FileState): Promise<{ present: boolean; detail: string }> {
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

/** A regular file's bytes as text through its pinned descriptor (not following a final link, as writes do not). */
async function contents(roots: Roots, path: string, maxBytes: number): Promise<FileContents> {
  let target;
  try {
    target = pin(roots, path, { follow: false });
  } catch (err) {
    if (err instanceof ErrnoError) return { kind: 'missing' };
    throw err;
  }
  try {
    if (target.stats === null) return { kind: 'missing' };
    if (!target.stats.isFile()) return { kind: 'not_a_file' };
    const fd = openFd(target.selfPath(), O_RDONLY | O_NONBLOCK);
    try {
      const size = fstatFd(fd).size;
      if (size > maxBytes) return { kind: 'file', size, sha256: null, text: null };
      const buffer = Buffer.alloc(size);
      const n = await readAt(fd, buffer);
      const bytes = buffer.subarray(0, n);
      let text: string | null;
      try {
        text = new TextDecoder('utf-8', { fatal: true }).decode(bytes);
      } catch {
        text = null;
      }
      return { kind: 'file', size: n, sha256: createHash('sha256').update(bytes).digest('hex'), text: text !== null && text.includes('\0') ? null : text };
    } finally {
      release(fd);
    }
  } finally {
    target.close();
  }
}

/** The entry's birth time, pinned without following a final link; null where there is none to tell. */
function birthTime(roots: Roots, path: string): number | null {
  let target;
  try {
    target = pin(roots, path, { follow: false });
  } catch (err) {
    if (err instanceof ErrnoError) return null;
    throw err;
  }
  try {
    return target.stats !== null && target.stats.birthtimeMs > 0 ? target.stats.birthtimeMs : null;
  } finally {
    target.close();
  }
}

/** The file capability over the configured roots: every path pinned from a root, descriptor by descriptor. */
export function createFileCapability(roots: Roots, options: FileHostOptions = {}): FileCapability {
  const fs = createFsTools(roots, {
    treeLimits: options.treeLimits,
    undo: options.undo,
    ...(options.undoRecords !== undefined ? { undoRecords: options.undoRecords } : {}),
    ...(options.midWrite !== undefined ? { midWrite: options.midWrite } : {}),
    ...(options.hashLimitBytes !== undefined ? { hashLimitBytes: options.hashLimitBytes } : {}),
  });
  const hashLimit = options.hashLimitBytes ?? DEFAULT_HASH_LIMIT_BYTES;
  const undo = createRestore({ roots, records: options.undoRecords, hashLimitBytes: hashLimit, ...(options.treeLimits !== undefined ? { treeLimits: options.treeLimits } : {}), ...(options.midUndo !== undefined ? { midUndo: options.midUndo } : {}) });
  return {
    roots: roots.configured,
    observe: (path, o) => observe(roots, path, { follow: o.follow, deep: o.deep === true, hashLimitBytes: o.hash === false ? 0 : hashLimit, treeLimits: options.treeLimits }),
    facts: (paths) => callFacts(paths, roots.configured),
    list: (path) => fs.fs_list({ path }),
    read: (path, maxBytes) => fs.fs_read({ path, maxBytes }),
    stat: (path) => fs.fs_stat({ path }),
    write: (path, content, mode, hold) => fs.fs_write({ path, content, mode }, hold),
    move: (from, to, overwrite, hold) => fs.fs_move({ from, to, overwrite }, hold),
    remove: (path, recursive, hold) => fs.fs_delete({ path, recursive }, hold),
    holdMoves: (moves, hold) => holdMoveMany(roots, moves, options.undo, hold),
    birthTimes: async (paths) => paths.map((path) => birthTime(roots, path)),
    dropName: async (path, file) => {
      const target = pin(roots, path, { follow: false });
      try {
        const s = target.stats;
        if (s === null || !s.isFile() || s.nlink < 2 || s.dev !== file.dev || s.ino !== file.ino) return false;
        await unlink(target.entryPath());
        return true;
      } finally {
        target.close();
      }
    },
    reversibility: (path, bytes, kind) =>
      reversibilityAt(roots, options.undo, path, { hashLimitBytes: hashLimit, ...(options.undoRecords !== undefined ? { records: options.undoRecords } : {}), ...(bytes !== undefined ? { bytes } : {}), ...(kind !== undefined ? { kind } : {}) }),
    held: (key) => findHeld(options.undo, key),
    unhold: (key) => unhold(options.undo, key),
    finishWrite: async (path, content, cut) => {
      const target = pin(roots, path, { follow: false });
      try {
        return await finishCutWrite(target, Buffer.from(content, 'utf8'), cut);
      } finally {
        target.close();
      }
    },
    undoable: (target) => undo.undoable(target),
    restore: (target) => undo.restore(target),
    restored: (target, options) => undo.restored(target, options),
    chmod: (path, mode, hold) => fs.fs_chmod({ path, mode }, hold),
    contents: (path, maxBytes) => contents(roots, path, maxBytes),
    appendedOnce: (path, content, before) => appendedOnce(roots, path, content, before),
  };
}
