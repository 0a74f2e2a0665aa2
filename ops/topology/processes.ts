import { spawn } from 'node:child_process';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';
import { processAlive, processStartTime } from '../dev/process-info';

/** One process the topology started: a pid and its start time name it, even after the pid is reused. */
export interface StartedProcess {
  readonly pid: number;
  readonly startTime: string | null;
}

export interface SpawnInput {
  readonly command: string;
  readonly args: readonly string[];
  readonly env: NodeJS.ProcessEnv;
  readonly log: string;
  readonly cwd?: string;
  /** Run as this user (a root caller starting PostgreSQL). */
  readonly uid?: number;
  readonly gid?: number;
}

/**
 * Starts a process that outlives `airlock topology up`: its own session
 * (a terminal's Ctrl-C does not reach it), output appended to its log file.
 */
export function spawnDetached(input: SpawnInput): StartedProcess {
  mkdirSync(dirname(input.log), { recursive: true });
  const out = openSync(input.log, 'a', 0o600);
  try {
    const child = spawn(input.command, [...input.args], {
      env: input.env,
      cwd: input.cwd,
      detached: true,
      stdio: ['ignore', out, out],
      ...(input.uid !== undefined ? { uid: input.uid } : {}),
      ...(input.gid !== undefined ? { gid: input.gid } : {}),
    });
    child.unref();
    if (child.pid === undefined) throw new Error(`cannot start ${input.command}`);
    return { pid: child.pid, startTime: processStartTime(child.pid) ?? null };
  } finally {
    closeSync(out);
  }
}

/** Still the process that was started (not a newcomer on its pid). */
export function stillRunning(p: StartedProcess): boolean {
  if (!processAlive(p.pid)) return false;
  return p.startTime === null || processStartTime(p.pid) === p.startTime;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Stops a started process: `first` (SIGTERM; PostgreSQL's fast shutdown is
 * SIGINT) to its session's group, SIGKILL after `graceMs`; each signal only
 * while it is still that process.
 */
export async function stopProcess(p: StartedProcess, graceMs = 15_000, first: NodeJS.Signals = 'SIGTERM'): Promise<'stopped' | 'not running'> {
  if (!stillRunning(p)) return 'not running';
  const signal = (s: NodeJS.Signals) => {
    if (!stillRunning(p)) return;
    try {
      process.kill(-p.pid, s);
    } catch {
      try {
        process.kill(p.pid, s);
      } catch {
        // Gone meanwhile.
      }
    }
  };
  signal(first);
  const deadline = Date.now() + graceMs;
  while (stillRunning(p) && Date.now() < deadline) await sleep(100);
  if (stillRunning(p)) {
    signal('SIGKILL');
    while (stillRunning(p)) await sleep(50);
  }
  return 'stopped';
}
