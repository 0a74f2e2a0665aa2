import { readFileSync, renameSync, unlinkSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { z } from 'zod';
import { processAlive, processCommandLine, processStartTime } from './process-info';

/**
 * The pid file of the Temporal dev server a stack started, in its data
 * folder: when the stack is killed outright (SIGKILL, a crash) the server
 * outlives it, and the next start finds it there.
 */

const pidFileSchema = z.object({
  schemaVersion: z.literal(1),
  pid: z.number().int().positive(),
  startTime: z.string().optional(),
  /** The database the server was started on: what makes it this folder's server. */
  dbFile: z.string(),
  address: z.string(),
});

export type ServerPidRecord = z.infer<typeof pidFileSchema>;

export function writeServerPidFile(file: string, record: Omit<ServerPidRecord, 'schemaVersion' | 'startTime'>): void {
  const startTime = processStartTime(record.pid);
  const scratch = `${file}.${process.pid}`;
  writeFileSync(scratch, `${JSON.stringify({ schemaVersion: 1, ...record, ...(startTime !== undefined ? { startTime } : {}) })}\n`, { mode: 0o600 });
  renameSync(scratch, file);
}

export function removeServerPidFile(file: string, pid: number | undefined): void {
  try {
    const record = readServerPidFile(file);
    if (record === undefined || record.pid === pid) unlinkSync(file);
  } catch {
    // Already gone.
  }
}

function readServerPidFile(file: string): ServerPidRecord | undefined {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch {
    return undefined;
  }
  try {
    const parsed = pidFileSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Whether the process is the recorded server: alive, started when it was
 * recorded, and its command line a `temporal server start-dev` on this
 * database. A live pid alone may be anything by now.
 */
export function isRecordedServer(record: ServerPidRecord): boolean {
  if (!processAlive(record.pid)) return false;
  const startTime = processStartTime(record.pid);
  if (record.startTime !== undefined && startTime !== undefined && startTime !== record.startTime) return false;
  const cmd = processCommandLine(record.pid);
  if (cmd === undefined) return false;
  const db = cmd.indexOf('--db-filename');
  return cmd.includes('server') && cmd.includes('start-dev') && db >= 0 && resolve(cmd[db + 1] ?? '') === resolve(record.dbFile);
}

export type LeftoverOutcome =
  | { readonly kind: 'none' }
  /** The pid file named a process that is gone, or is not that server any more. */
  | { readonly kind: 'stale'; readonly pid: number }
  | { readonly kind: 'stopped'; readonly pid: number; readonly address: string };

/**
 * Stops the server a killed stack left behind on this data folder, if the
 * pid file names one that still runs. The caller holds the folder's lock:
 * no live stack uses that server.
 */
export async function stopLeftoverServer(file: string): Promise<LeftoverOutcome> {
  const record = readServerPidFile(file);
  if (record === undefined) {
    removeServerPidFile(file, undefined);
    return { kind: 'none' };
  }
  if (!isRecordedServer(record)) {
    removeServerPidFile(file, record.pid);
    return { kind: 'stale', pid: record.pid };
  }
  await terminate(record.pid);
  removeServerPidFile(file, record.pid);
  return { kind: 'stopped', pid: record.pid, address: record.address };
}

/** SIGTERM, then SIGKILL after 10 s; resolves once the process is gone. */
async function terminate(pid: number): Promise<void> {
  const signal = (name: NodeJS.Signals) => {
    try {
      process.kill(pid, name);
    } catch {
      // Gone already.
    }
  };
  signal('SIGTERM');
  const deadline = Date.now() + 10_000;
  while (processAlive(pid)) {
    if (Date.now() > deadline) {
      signal('SIGKILL');
      await new Promise((r) => setTimeout(r, 200));
      if (!processAlive(pid)) return;
    }
    await new Promise((r) => setTimeout(r, 100));
  }
}
