import { spawn, type ChildProcess } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { performance } from 'node:perf_hooks';

const children = new Set<ChildProcess>();

// Nothing the bench spawned outlives it, however it ends.
process.once('exit', () => {
  for (const child of children) child.kill('SIGKILL');
});

/** A long-running child (a worker) whose output is kept and searchable. */
export interface Child {
  readonly pid: number;
  output(): string;
  waitFor(pattern: RegExp, timeoutMs: number): Promise<void>;
  stop(): Promise<void>;
}

export function spawnChild(command: string, args: readonly string[], env: NodeJS.ProcessEnv): Child {
  const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
  children.add(child);
  let text = '';
  const append = (chunk: Buffer) => {
    text += chunk.toString('utf8');
  };
  child.stdout?.on('data', append);
  child.stderr?.on('data', append);
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      children.delete(child);
      resolve();
    });
  });
  let done = false;
  void exited.then(() => {
    done = true;
  });
  const pid = child.pid;
  if (pid === undefined) throw new Error(`could not start ${command}`);
  return {
    pid,
    output: () => text,
    async waitFor(pattern, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      while (!pattern.test(text)) {
        if (done) throw new Error(`${command} ${args.join(' ')} exited before ${String(pattern)}:\n${text.slice(-2000)}`);
        if (Date.now() > deadline) throw new Error(`timed out waiting for ${String(pattern)} from ${command}:\n${text.slice(-2000)}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
    async stop() {
      if (done) return;
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(killer);
    },
  };
}

export interface TimedRun {
  readonly ms: number;
  readonly code: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/** Wall time of one short-lived process, from spawn to exit. */
export function timedRun(command: string, args: readonly string[], env: NodeJS.ProcessEnv): Promise<TimedRun> {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const child = spawn(command, args, { env, stdio: ['ignore', 'pipe', 'pipe'] });
    children.add(child);
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    child.stdout?.on('data', (c: Buffer) => out.push(c));
    child.stderr?.on('data', (c: Buffer) => err.push(c));
    child.once('error', (e) => {
      children.delete(child);
      reject(e);
    });
    child.once('close', (code) => {
      const ms = performance.now() - t0;
      children.delete(child);
      resolve({ ms, code, stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8') });
    });
  });
}

/** Resident set size of a process in bytes, from /proc (Linux, as the tools worker requires anyway). */
export function rssBytes(pid: number): number {
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (match === null) throw new Error(`no VmRSS for process ${pid}`);
  return Number(match[1]) * 1024;
}

/** CPU seconds (user + system) a process has used so far, from /proc. */
export function cpuSeconds(pid: number): number {
  // Fields after the command name, which is in parentheses and may hold spaces; utime and stime are the 12th and 13th.
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  const ticks = Number(fields[11]) + Number(fields[12]);
  // Linux reports in USER_HZ, 100 on every architecture Node runs on.
  return ticks / 100;
}

/** CPU seconds this process has used so far. */
export function ownCpuSeconds(): number {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1e6;
}

/**
 * Stops the resident CLI processes (cli/resident/) that CLI runs with
 * `XDG_RUNTIME_DIR` set to this folder started: they are detached from the
 * bench, so they are found by their title and environment.
 */
export function stopResidents(runtimeDir: string): number {
  let stopped = 0;
  for (const entry of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (!readFileSync(`/proc/${entry}/cmdline`, 'utf8').startsWith('airlock resident CLI')) continue;
      if (!readFileSync(`/proc/${entry}/environ`, 'utf8').split('\0').includes(`XDG_RUNTIME_DIR=${runtimeDir}`)) continue;
      process.kill(Number(entry), 'SIGTERM');
      stopped++;
    } catch {
      // Gone while we looked.
    }
  }
  return stopped;
}
