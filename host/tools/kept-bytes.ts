import { createHash, type Hash } from 'node:crypto';
import { fsyncSync, read, write } from 'node:fs';
import { rename, unlink } from 'node:fs/promises';
import { ToolRefusal } from '../../core/tools/tool-refusal';
import { fstatFd, O_CREAT, O_EXCL, O_NOFOLLOW, O_WRONLY, openFd, procPath, release } from '../fs/descriptors';

/**
 * Bytes of a file kept beside it for undo, and writes that pick up where
 * a kill cut them: a file that holds a prefix of what was being written
 * into it (a truncate, then part of the bytes) gets the rest, so a retry
 * finishes the write instead of leaving a half.
 */

const CHUNK = 1024 * 1024;

function readAtOffset(fd: number, buffer: Buffer, position: number): Promise<number> {
  return new Promise((resolve, reject) => read(fd, buffer, 0, buffer.length, position, (err, n) => (err === null ? resolve(n) : reject(err))));
}

async function writeAtOffset(fd: number, data: Buffer, position: number): Promise<void> {
  let done = 0;
  while (done < data.length) {
    const from = done;
    done += await new Promise<number>((resolve, reject) => write(fd, data, from, data.length - from, position + from, (err, n) => (err === null ? resolve(n) : reject(err))));
  }
}

/** Bytes to write or compare: a buffer, or a file read through its descriptor. */
export type ByteSource = { readonly kind: 'buffer'; readonly bytes: Buffer } | { readonly kind: 'file'; readonly fd: number };

async function sizeOf(source: ByteSource): Promise<number> {
  return source.kind === 'buffer' ? source.bytes.length : fstatFd(source.fd).size;
}

async function chunkOf(source: ByteSource, position: number, length: number): Promise<Buffer> {
  if (source.kind === 'buffer') return source.bytes.subarray(position, position + length);
  const buffer = Buffer.alloc(length);
  const n = await readAtOffset(source.fd, buffer, position);
  return buffer.subarray(0, n);
}

/**
 * Copies the open file's first `size` bytes into `name` in the folder
 * `own` (mode 0600), under a temporary name renamed once complete, so the
 * name appears only whole. Refuses when the file holds fewer bytes than
 * `size` (it changed since it was checked).
 */
export async function copyAside(fromFd: number, own: number, name: string, size: number, what: string): Promise<void> {
  const part = procPath(own, `${name}.part`);
  await unlink(part).catch(() => undefined);
  const out = openFd(part, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600);
  try {
    let position = 0;
    const buffer = Buffer.alloc(Math.min(CHUNK, Math.max(size, 1)));
    while (position < size) {
      const n = await readAtOffset(fromFd, buffer.subarray(0, Math.min(buffer.length, size - position)), position);
      if (n === 0) throw new ToolRefusal(`${what} changed while its content was being kept; nothing was changed`);
      await writeAtOffset(out, buffer.subarray(0, n), position);
      position += n;
    }
    fsyncSync(out);
  } catch (err) {
    release(out);
    // A copy cut short (the disk full, the file changing) keeps nothing.
    await unlink(part).catch(() => undefined);
    throw err;
  }
  release(out);
  await rename(part, procPath(own, name));
}

/**
 * Whether the file (`fd`, open for reading and writing) holds a prefix of
 * `source` from byte `offset` on (what a write cut short leaves), and if
 * so, writes the rest: true once it holds all of `source` there, nothing
 * more. False, having written nothing, when it holds anything else.
 */
export async function completeFrom(fd: number, source: ByteSource, offset = 0): Promise<boolean> {
  const total = await sizeOf(source);
  const have = fstatFd(fd).size - offset;
  if (have < 0 || have > total) return false;
  const buffer = Buffer.alloc(Math.min(CHUNK, Math.max(have, 1)));
  for (let position = 0; position < have; ) {
    const n = await readAtOffset(fd, buffer.subarray(0, Math.min(buffer.length, have - position)), offset + position);
    if (n === 0) return false;
    if (!buffer.subarray(0, n).equals(await chunkOf(source, position, n))) return false;
    position += n;
  }
  for (let position = have; position < total; position += CHUNK) await writeAtOffset(fd, await chunkOf(source, position, Math.min(CHUNK, total - position)), offset + position);
  return true;
}

/** `hash` (sha256 unless given) fed the first `size` bytes of an open file (fewer when it is shorter). */
export async function hashPrefix(fd: number, size: number, hash: Hash = createHash('sha256')): Promise<Hash> {
  const buffer = Buffer.alloc(Math.min(CHUNK, Math.max(size, 1)));
  for (let position = 0; position < size; ) {
    const n = await readAtOffset(fd, buffer.subarray(0, Math.min(buffer.length, size - position)), position);
    if (n === 0) break;
    hash.update(buffer.subarray(0, n));
    position += n;
  }
  return hash;
}
