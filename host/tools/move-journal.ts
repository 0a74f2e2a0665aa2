import { createHash } from 'node:crypto';
import { closeSync, fstatSync, fsyncSync, ftruncateSync, mkdirSync, openSync, readFileSync, readSync, writeSync } from 'node:fs';
import { readdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { AirlockError } from '../../core/util/errors';
import type { JournalCapability } from '../../core/tools/capabilities/journal';
import { errnoCode } from '../fs/descriptors';

/**
 * The journal of one call: a file per grant nonce in the tools worker's
 * data folder, one JSON line per record, each written and fsync'ed before
 * `append` returns. A line cut short by a crash (no newline yet) was never
 * acknowledged and is left out; any other line that does not parse stops
 * the call rather than be guessed at.
 */

const lineSchema = z.strictObject({
  schemaVersion: z.literal(1),
  /** When it was written, for people reading the file. */
  at: z.string(),
  record: z.record(z.string(), z.unknown()),
});

export class JournalUnreadable extends AirlockError {
  override name = 'JournalUnreadable';
  constructor(
    readonly file: string,
    readonly line: number,
    detail: string,
  ) {
    super(`the journal ${file} has an unreadable line ${line} (${detail}); move the file away only after checking what the call moved`);
  }
}

export interface CallJournalOptions {
  /** TEST ONLY (`AIRLOCK_TEST_CRASH_AT=mid-batch:N`): called before each append; may wait forever for the test to kill the process. */
  readonly beforeAppend?: (record: Readonly<Record<string, unknown>>) => Promise<void>;
  readonly now?: () => Date;
}

/** The journal file of a call: its key as the name when it is plain (a hex nonce), else a digest of it. */
export function journalFile(dir: string, key: string): string {
  const name = /^[A-Za-z0-9_-]{1,128}$/.test(key) ? key : createHash('sha256').update(key, 'utf8').digest('hex');
  return join(dir, `${name}.jsonl`);
}

export function createCallJournal(dir: string, key: string, options: CallJournalOptions = {}): JournalCapability {
  const file = journalFile(dir, key);
  const now = options.now ?? (() => new Date());
  return {
    async read() {
      let text: string;
      try {
        text = readFileSync(file, 'utf8');
      } catch (err) {
        if (errnoCode(err) === 'ENOENT') return [];
        throw err;
      }
      const lines = text.split('\n');
      // The last piece has no newline: empty, or a record a crash cut short, which was never acknowledged.
      lines.pop();
      return lines.map((line, i) => {
        let raw: unknown;
        try {
          raw = JSON.parse(line);
        } catch (err) {
          throw new JournalUnreadable(file, i + 1, err instanceof Error ? err.message : 'not JSON');
        }
        const parsed = lineSchema.safeParse(raw);
        if (!parsed.success) throw new JournalUnreadable(file, i + 1, parsed.error.issues[0]?.message ?? 'invalid');
        return parsed.data.record;
      });
    },

    async append(record) {
      await options.beforeAppend?.(record);
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      const line = `${JSON.stringify({ schemaVersion: 1, at: now().toISOString(), record })}\n`;
      const fd = openSync(file, 'a+', 0o600);
      let created = false;
      try {
        const size = fstatSync(fd).size;
        created = size === 0;
        // A line a crash cut short was never acknowledged: it goes, so the new one is not glued to it.
        if (size > 0 && lastByte(fd, size) !== 0x0a) ftruncateSync(fd, wholeLines(file));
        writeSync(fd, line);
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      if (created) fsyncDir(dir);
    },
  };
}

function lastByte(fd: number, size: number): number | undefined {
  const one = Buffer.alloc(1);
  readSync(fd, one, 0, 1, size - 1);
  return one[0];
}

/** Bytes up to and with the last newline. */
function wholeLines(file: string): number {
  const bytes = readFileSync(file);
  return bytes.lastIndexOf(0x0a) + 1;
}

/** The new file's name is durable too. */
function fsyncDir(dir: string): void {
  const fd = openSync(dir, 'r');
  try {
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/**
 * Removes journals older than `olderThanMs` (by their last write): a
 * settled call's journal goes when its outcome is stored; these are what a
 * crash left between the two, long after the grant they served expired.
 */
export async function pruneJournals(dir: string, olderThanMs: number, now = Date.now()): Promise<number> {
  let removed = 0;
  const names = await readdir(dir).catch(() => [] as string[]);
  for (const name of names) {
    if (!name.endsWith('.jsonl')) continue;
    const path = join(dir, name);
    const info = await stat(path).catch(() => undefined);
    if (info === undefined || !info.isFile() || now - info.mtimeMs < olderThanMs) continue;
    await rm(path, { force: true });
    removed++;
  }
  return removed;
}
