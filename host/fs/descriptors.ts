import { closeSync, constants, fstatSync, ftruncate, openSync, read, readlinkSync, write, type Stats } from 'node:fs';
import { isAbsolute, relative, sep } from 'node:path';

/**
 * File descriptors and the `/proc/self/fd` magic links the file tools act
 * through. `/proc/self/fd/N/name` makes the kernel start at the directory
 * descriptor N holds, whatever its path is now, so `name` is looked up in
 * that very directory and nowhere else.
 */

/** Linux's O_PATH (010000000 on every architecture Node supports); Node does not export it. */
export const O_PATH = 0o10000000;
export const { O_DIRECTORY, O_NOFOLLOW, O_RDONLY, O_WRONLY, O_RDWR, O_CREAT, O_EXCL, O_APPEND, O_NONBLOCK } = constants;

/** The descriptor's magic link, or a single name inside the directory it holds. */
export function procPath(fd: number, name?: string): string {
  return name === undefined ? `/proc/self/fd/${fd}` : `/proc/self/fd/${fd}/${name}`;
}

/** An errno-style failure raised by the tools themselves, with the path it concerns. */
export class ErrnoError extends Error {
  override name = 'ErrnoError';
  constructor(
    readonly code: 'ENOENT' | 'ENOTDIR' | 'EEXIST' | 'ENOTEMPTY',
    readonly path: string,
  ) {
    super(`${code}: ${path}`);
  }
}

// No `instanceof Error`: errors from Node's own realm fail it inside a vm context (jest).
export function errnoCode(err: unknown): string | undefined {
  if (typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string') return err.code;
  return undefined;
}

export function messageOf(err: unknown): string {
  if (typeof err === 'object' && err !== null && 'message' in err && typeof err.message === 'string') return err.message;
  return String(err);
}

// Opening, stat'ing and closing are synchronous: a handful of metadata calls
// per path, ten times cheaper than a trip through libuv's thread pool.
// Reading and writing contents stay asynchronous.

export function openFd(path: string, flags: number, mode = 0o666): number {
  return openSync(path, flags, mode);
}

/** Closes and never throws: for cleanup paths, where the first error is the one to report. */
export function release(fd: number | null): void {
  if (fd === null) return;
  try {
    closeSync(fd);
  } catch {
    // Already closed: nothing left to release.
  }
}

export function fstatFd(fd: number): Stats {
  return fstatSync(fd);
}

/** Cuts the file to `length` bytes (empty by default). */
export function truncateFd(fd: number, length = 0): Promise<void> {
  return new Promise((resolve, reject) => ftruncate(fd, length, (err) => (err === null ? resolve() : reject(err))));
}

export async function writeAll(fd: number, data: Buffer): Promise<void> {
  let offset = 0;
  while (offset < data.length) {
    const from = offset;
    offset += await new Promise<number>((resolve, reject) =>
      write(fd, data, from, data.length - from, null, (err, written) => (err === null ? resolve(written) : reject(err))),
    );
  }
}

/** Reads from the start of the file into `buffer`; returns the bytes read. */
export function readAt(fd: number, buffer: Buffer): Promise<number> {
  return new Promise((resolve, reject) => read(fd, buffer, 0, buffer.length, 0, (err, n) => (err === null ? resolve(n) : reject(err))));
}

/** `child` is `parent` or below it (both absolute, normalized). */
export function inside(parent: string, child: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (!isAbsolute(rel) && rel.split(sep)[0] !== '..');
}

/** Where the kernel says the descriptor is now. */
export function locationOf(fd: number): string {
  return readlinkSync(procPath(fd));
}
