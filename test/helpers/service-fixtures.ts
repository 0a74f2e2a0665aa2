import { readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { servicesConfigSchema, type ProcessServiceConfig, type ServicesConfig } from '../../core/config/tools/services';

/**
 * A small real service for the `process` adapter: a node program that
 * serves TCP on a port (once its ready file exists, when one is named),
 * optionally ignores SIGTERM, starts a child of its own, writes its
 * environment to a file, or appends its pid to a file at every start.
 */
const SERVICE_SOURCE = `
const net = require('node:net');
const fs = require('node:fs');
const { spawn } = require('node:child_process');
const [port, ready] = process.argv.slice(2);
if (process.env.STARTS_OUT) fs.appendFileSync(process.env.STARTS_OUT, process.pid + '\\n');
if (process.env.ENV_OUT) fs.writeFileSync(process.env.ENV_OUT, JSON.stringify(process.env));
if (process.env.CHILD_PID_OUT) {
  const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { stdio: 'ignore' });
  fs.writeFileSync(process.env.CHILD_PID_OUT, String(child.pid));
}
if (process.env.EXIT_AT_ONCE) process.exit(Number(process.env.EXIT_AT_ONCE));
// A port someone else took for a moment (other tests share the machine) is tried again, not a crash.
// A health probe may reset its connection: that is the probe's business, not a crash.
const listen = () => net.createServer((c) => { c.on('error', () => {}); c.end('ok\\n'); }).once('error', () => setTimeout(listen, 50)).listen(Number(port), '127.0.0.1');
if (ready) {
  const timer = setInterval(() => { if (fs.existsSync(ready)) { clearInterval(timer); listen(); } }, 20);
} else listen();
process.on('SIGTERM', () => { if (process.env.IGNORE_TERM !== '1') process.exit(0); });
setInterval(() => {}, 1 << 30);
`;

export function writeServiceScript(dir: string): string {
  const file = join(dir, 'service.js');
  writeFileSync(file, SERVICE_SOURCE);
  return file;
}

/** A port nothing listens on right now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address !== null ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export async function waitUntil(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await sleep(25);
  }
}

export function processAlive(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    return state !== 'Z' && state !== 'X';
  } catch {
    return false;
  }
}

export function readPid(file: string): number {
  return Number(readFileSync(file, 'utf8').trim());
}

/**
 * Kills a process group (or process) a test left behind; never throws. Only
 * a process that is still this fixture's service (or its child): a pid read
 * from a stale pid file may belong to anything by now (a test worker, the
 * Temporal server), and is left alone.
 */
export function killQuietly(pid: number | undefined): void {
  if (pid === undefined || !Number.isInteger(pid) || pid <= 1) return;
  let cmdline: string;
  try {
    cmdline = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
  } catch {
    return;
  }
  if (!cmdline.includes('service.js') && !cmdline.includes('1 << 30')) return;
  for (const target of [-pid, pid]) {
    try {
      process.kill(target, 'SIGKILL');
    } catch {
      // Already gone.
    }
  }
}

/** One process service, as the config file would give it (defaults applied by the schema). */
export function processServiceConfig(name: string, fields: Partial<Omit<ProcessServiceConfig, 'adapter'>> & Pick<ProcessServiceConfig, 'command' | 'pidFile'>): ServicesConfig {
  return servicesConfigSchema.parse({ [name]: { adapter: 'process', ...fields } });
}
