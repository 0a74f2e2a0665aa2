import { linkSync, readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { AirlockError } from '../../core/util/errors';
import { processAlive, processStartTime } from './process-info';

/** Another running `airlock dev` holds the data folder. */
export class DataDirLockedError extends AirlockError {
  override name = 'DataDirLockedError';
  constructor(
    readonly dataDir: string,
    readonly holder: number,
  ) {
    super(`the data folder ${dataDir} is in use by another airlock dev (pid ${holder}); stop it first, or set AIRLOCK_DATA_DIR to another folder`);
  }
}

const lockSchema = z.object({
  schemaVersion: z.literal(1),
  pid: z.number().int().positive(),
  /** The holder's start time (Linux), so a reused pid is not taken for the holder. */
  startTime: z.string().optional(),
});

export interface DataDirLock {
  readonly file: string;
  release(): void;
}

const TAKEOVER_ATTEMPTS = 5;

function holderAlive(lock: z.infer<typeof lockSchema>): boolean {
  if (!processAlive(lock.pid)) return false;
  if (lock.startTime === undefined) return true;
  const now = processStartTime(lock.pid);
  return now === undefined || now === lock.startTime;
}

function readLock(file: string): z.infer<typeof lockSchema> | undefined {
  try {
    const parsed = lockSchema.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Locks the data folder for this process: `<data>/dev.lock` (or `name`)
 * holds its pid.
 * The file is written whole under a private name and linked into place,
 * which fails when a lock exists, so two starters never both win. A lock
 * whose holder is gone (killed, crashed) is moved aside and taken over.
 */
export function lockDataDir(dataDir: string, options: { readonly name?: string; readonly locked?: (holder: number) => AirlockError } = {}): DataDirLock {
  const file = join(dataDir, options.name ?? 'dev.lock');
  const startTime = processStartTime(process.pid);
  const own = JSON.stringify({ schemaVersion: 1, pid: process.pid, ...(startTime !== undefined ? { startTime } : {}) });
  const scratch = `${file}.${process.pid}`;
  writeFileSync(scratch, `${own}\n`, { mode: 0o600 });
  try {
    for (let attempt = 0; attempt < TAKEOVER_ATTEMPTS; attempt++) {
      try {
        linkSync(scratch, file);
        return lockHeld(file, own);
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      }
      const held = readLock(file);
      if (held !== undefined && holderAlive(held)) throw options.locked?.(held.pid) ?? new DataDirLockedError(dataDir, held.pid);
      takeOver(file, held);
    }
    throw new AirlockError(`could not lock the folder ${dataDir}: its lock file ${file} kept changing; try again`);
  } finally {
    unlinkSync(scratch);
  }
}

/** Moves a stale lock aside; puts it back when it turned out to be a fresh one taken meanwhile. */
function takeOver(file: string, stale: z.infer<typeof lockSchema> | undefined): void {
  const aside = `${file}.stale-${process.pid}`;
  try {
    renameSync(file, aside);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw err;
  }
  const moved = readLock(aside);
  if (moved !== undefined && stale !== undefined && moved.pid !== stale.pid) {
    try {
      linkSync(aside, file);
    } catch {
      // Someone holds the lock again; the next attempt reads who.
    }
  }
  unlinkSync(aside);
}

function lockHeld(file: string, own: string): DataDirLock {
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    process.off('exit', release);
    try {
      // Only our own lock: never a successor's.
      if (readFileSync(file, 'utf8').trim() === own) unlinkSync(file);
    } catch {
      // Already gone.
    }
  };
  process.once('exit', release);
  return { file, release };
}
