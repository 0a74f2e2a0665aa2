import { appendFileSync, closeSync, createReadStream, existsSync, fstatSync, ftruncateSync, mkdirSync, openSync, readSync, renameSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { dirname } from 'node:path';
import { createInterface } from 'node:readline';
import type { AuditEvent } from '../../../core/audit/events';
import { firstLine } from '../../../core/temporal/describe-error';
import { type AuditSink } from './store';

/** One warning line, then at most one a minute while the failure lasts: a full disk must not flood the log. */
const WARN_EVERY_MS = 60_000;

/** How far back a torn tail is looked for: an event line is far shorter. */
const MAX_TAIL_BYTES = 1 << 20;

export interface JsonlAuditSinkOptions {
  /** Where warnings go (one line each); default stderr. */
  readonly warn?: (line: string) => void;
  readonly now?: () => number;
}

/**
 * Append-only JSON lines, one event per line. A batch is one write of
 * whole lines; a write that fails part way is cut back to where the file
 * ended, and bytes after the last newline (a crash mid-write, an older
 * build) are moved to `<file>.torn` before anything is appended, so a line
 * is always a whole event.
 */
export class JsonlAuditSink implements AuditSink {
  readonly idempotent = false;
  private readonly warn: (line: string) => void;
  private readonly now: () => number;
  private failing: { readonly since: number; lastWarned: number; failures: number; unwarned: number } | undefined;

  constructor(
    readonly file: string,
    options: JsonlAuditSinkOptions = {},
  ) {
    this.warn = options.warn ?? ((line) => process.stderr.write(`${line}\n`));
    this.now = options.now ?? Date.now;
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    try {
      this.withFile((fd) => this.repairTail(fd));
    } catch {
      // A folder that is read-only or full now is reported by the first write that fails.
    }
  }

  async write(events: readonly AuditEvent[]): Promise<void> {
    if (events.length === 0) return;
    const data = Buffer.from(events.map((e) => `${JSON.stringify(e)}\n`).join(''), 'utf8');
    try {
      this.withFile((fd) => {
        this.repairTail(fd);
        appendWhole(fd, data);
      });
    } catch (err) {
      this.failed(err);
      // The job shows this message: it names the file (an fs error from a write does not).
      throw new Error(`cannot write ${this.file}: ${errorText(err)}`, { cause: err });
    }
    this.recovered();
  }

  /**
   * Rewrites the file without events whose `at` is older than this. The
   * kept lines are copied to `<file>.pruning` as a stream; then, in one
   * synchronous step that no write of this process can come between, what
   * was appended meanwhile is copied too and the copy takes the file's
   * name. A line that is not an event is kept: it is never dropped quietly.
   */
  async prune(olderThanMs: number): Promise<number> {
    if (!existsSync(this.file)) return 0;
    const cutoff = new Date(this.now() - olderThanMs).toISOString();
    const copy = `${this.file}.pruning`;
    const end = statSync(this.file).size;
    if (end === 0) return 0;
    let removed = 0;
    const out = openSync(copy, 'w', 0o600);
    try {
      for await (const line of createInterface({ input: createReadStream(this.file, { encoding: 'utf8', end: end - 1 }), crlfDelay: Infinity })) {
        if (line === '') continue;
        const at = /"at":"([^"]+)"/.exec(line)?.[1];
        if (at !== undefined && at < cutoff) {
          removed++;
          continue;
        }
        writeSync(out, `${line}\n`);
      }
      if (removed === 0) return 0;
      const now = statSync(this.file).size;
      if (now > end) {
        const tail = Buffer.alloc(now - end);
        const fd = openSync(this.file, 'r');
        try {
          readSync(fd, tail, 0, tail.length, end);
        } finally {
          closeSync(fd);
        }
        writeSync(out, tail);
      }
      renameSync(copy, this.file);
      return removed;
    } finally {
      closeSync(out);
      if (existsSync(copy)) unlinkSync(copy);
    }
  }

  private withFile(use: (fd: number) => void): void {
    const fd = openSync(this.file, 'a+', 0o600);
    try {
      use(fd);
    } finally {
      closeSync(fd);
    }
  }

  /** Moves bytes after the last newline aside, so the next line does not glue onto them. */
  private repairTail(fd: number): void {
    const size = fstatSync(fd).size;
    if (size === 0 || readAt(fd, size - 1, 1).toString('latin1') === '\n') return;
    const start = Math.max(0, size - MAX_TAIL_BYTES);
    const tail = readAt(fd, start, size - start);
    const cut = start + tail.lastIndexOf(0x0a) + 1;
    const fragment = tail.subarray(cut - start);
    let saved = `moved to ${this.file}.torn`;
    try {
      appendFileSync(`${this.file}.torn`, Buffer.concat([fragment, Buffer.from('\n')]), { mode: 0o600 });
    } catch (err) {
      saved = `dropped (cannot write ${this.file}.torn: ${errorText(err)})`;
    }
    ftruncateSync(fd, cut);
    this.warn(`airlock: audit log ${this.file} ended in a partial line (${fragment.length} bytes, from a write cut short); ${saved}`);
  }

  private failed(err: unknown): void {
    const now = this.now();
    const f = (this.failing ??= { since: now, lastWarned: -Infinity, failures: 0, unwarned: 0 });
    f.failures++;
    if (now - f.lastWarned < WARN_EVERY_MS) {
      f.unwarned++;
      return;
    }
    const more = f.unwarned > 0 ? ` (${f.unwarned} more failed write(s) since the last warning)` : '';
    this.warn(`airlock: cannot write the audit log ${this.file}: ${errorText(err)}; jobs keep their events and retry${more}`);
    f.lastWarned = now;
    f.unwarned = 0;
  }

  private recovered(): void {
    if (this.failing === undefined) return;
    this.warn(`airlock: audit log ${this.file} is writable again after ${this.failing.failures} failed write(s)`);
    this.failing = undefined;
  }
}

/** An fs error's own message (it may come from another realm, where `instanceof Error` fails). */
function errorText(err: unknown): string {
  const message = typeof err === 'object' && err !== null && 'message' in err && typeof err.message === 'string' ? err.message : String(err);
  return firstLine(message);
}

function readAt(fd: number, position: number, length: number): Buffer {
  const buffer = Buffer.alloc(length);
  const read = readSync(fd, buffer, 0, length, position);
  return buffer.subarray(0, read);
}

/** All of `data` at the end of the file, or nothing: a short or failed write is cut back. */
function appendWhole(fd: number, data: Buffer): void {
  const before = fstatSync(fd).size;
  let written = 0;
  try {
    while (written < data.length) written += writeSync(fd, data, written, data.length - written);
  } catch (err) {
    if (written > 0) {
      try {
        // Only our own partial batch is at the end (writes of this process are synchronous).
        if (fstatSync(fd).size === before + written) ftruncateSync(fd, before);
      } catch {
        // The next write's tail repair moves the fragment aside.
      }
    }
    throw err;
  }
}
