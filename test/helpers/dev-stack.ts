import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from './ports';
import { repoRoot, spawnNode, type Spawned } from './processes';
import { testServer } from './temporal-env';

const run = promisify(execFile);

/** The environment of an `airlock dev` on its own ports, with the data folder given. */
export async function devEnv(dataDir: string): Promise<NodeJS.ProcessEnv> {
  return {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TEMPORAL_ADDRESS: `127.0.0.1:${await freePort()}`,
    AIRLOCK_UI_PORT: String(await freePort()),
    AIRLOCK_CODEC_PORT: String(await freePort()),
    AIRLOCK_INBOX_LISTEN: `127.0.0.1:${await freePort()}`,
    AIRLOCK_DATA_DIR: dataDir,
    // The CLI the suite already resolved: these tests are about `airlock dev`, not about building it.
    TEMPORAL_CLI: testServer.cli,
    AIRLOCK_REVIEWER: 'owner',
  };
}

/** Runs the built CLI to its end: exit code, stdout and stderr. */
export async function airlock(env: NodeJS.ProcessEnv, args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [join(repoRoot, 'bin', 'airlock.js'), ...args], { env });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/** `airlock dev` in its own process group (as a terminal runs it), once it says it runs. */
export async function startDev(env: NodeJS.ProcessEnv, args: string[] = []): Promise<Spawned> {
  const dev = spawnNode('bin/airlock.js', ['dev', ...args], env, { detached: true });
  await dev.waitFor(/airlock dev is running/);
  return dev;
}

/** Whether a process runs (a zombie does not). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return true;
  }
}

/** Waits until the process is gone; false when it is still there after the wait. */
export async function gone(pid: number, timeoutMs = 15_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (alive(pid)) {
    if (Date.now() > deadline) return false;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}

/** Processes whose command line mentions the folder. */
export function processesMentioning(dir: string): string[] {
  if (!existsSync('/proc')) return [];
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmd.includes(dir) && Number(pid) !== process.pid) found.push(`${pid}: ${cmd}`);
    } catch {
      // Gone while we looked.
    }
  }
  return found;
}

/** The pid the stack recorded for its Temporal dev server. */
export function serverPid(dataDir: string): number {
  const record = JSON.parse(readFileSync(join(dataDir, 'temporal.pid'), 'utf8')) as { pid: number };
  return record.pid;
}

/** An `airlock dev --demo` on its own ports, its demo job started. */
export interface DemoStack {
  readonly dev: Spawned;
  readonly jobId: string;
  /** Temporal's gRPC address. */
  readonly address: string;
  /** The Web UI, e.g. `http://127.0.0.1:PORT`. */
  readonly webUi: string;
  /** The codec server (used with `--codec`). */
  readonly codecUrl: string;
  /** The approval page, as the stack prints it. */
  readonly inbox: string;
  /** Stops the whole stack as Ctrl-C would. */
  stop(): Promise<void>;
}

/** Starts `airlock dev --demo` (plus `args`) in its own process group and waits for its demo job. */
export async function startDemo(dataDir: string, args: string[] = []): Promise<DemoStack> {
  const env = await devEnv(dataDir);
  const dev = spawnNode('bin/airlock.js', ['dev', '--demo', ...args], env, { detached: true });
  await dev.waitFor(/Demo job (demo-\S+) started/);
  return {
    dev,
    jobId: /Demo job (demo-\S+) started/.exec(dev.output())?.[1] ?? '',
    address: env.TEMPORAL_ADDRESS ?? '',
    webUi: `http://127.0.0.1:${env.AIRLOCK_UI_PORT ?? ''}`,
    codecUrl: `http://127.0.0.1:${env.AIRLOCK_CODEC_PORT ?? ''}`,
    inbox: /Approval page\s+(\S+)/.exec(dev.output())?.[1] ?? '',
    async stop() {
      if (dev.child.pid === undefined) return;
      process.kill(-dev.child.pid, 'SIGINT');
      await dev.exited();
    },
  };
}
