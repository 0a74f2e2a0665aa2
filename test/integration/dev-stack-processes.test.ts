import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { alive, airlock, devEnv, gone, processesMentioning, serverPid, startDev } from '../helpers/dev-stack';
import type { Spawned } from '../helpers/processes';

let dir: string;
let data: string;
const started: Spawned[] = [];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-dev-proc-'));
  data = join(dir, 'data');
});
afterAll(() => {
  for (const dev of started) {
    try {
      process.kill(-dev.child.pid!, 'SIGKILL');
    } catch {
      // Ended already.
    }
  }
  for (const line of processesMentioning(dir)) process.kill(Number(line.split(':')[0]), 'SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

async function start(env: NodeJS.ProcessEnv): Promise<Spawned> {
  const dev = await startDev(env);
  started.push(dev);
  return dev;
}

test('SIGHUP (the terminal closed) stops the stack and everything it started', async () => {
  const dev = await start(await devEnv(data));
  const devPid = dev.child.pid!;
  const server = serverPid(data);
  // The recorded pid is the server on this folder's database, not just any process.
  expect(readFileSync(`/proc/${server}/cmdline`, 'utf8').split('\0')).toEqual(expect.arrayContaining(['start-dev', join(data, 'temporal.sqlite')]));
  expect(existsSync(join(data, 'dev.lock'))).toBe(true);

  // A closed terminal hangs up its foreground process group.
  process.kill(-devPid, 'SIGHUP');
  expect(await dev.exited()).toBe(0);
  expect(dev.output()).toContain('airlock: dev stack stopped');
  expect(await gone(devPid)).toBe(true);
  expect(await gone(server)).toBe(true);
  expect(processesMentioning(dir)).toEqual([]);
  expect(existsSync(join(data, 'dev.lock'))).toBe(false);
  expect(existsSync(join(data, 'temporal.pid'))).toBe(false);
});

test('a second stack on the same data folder, on other ports, is refused with the holder pid and starts nothing', async () => {
  const first = await start(await devEnv(data));
  const server = serverPid(data);

  const second = await airlock(await devEnv(data), ['dev']);
  expect(second.code).toBe(1);
  const lines = second.stderr.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(new RegExp(`in use by another airlock dev \\(pid ${first.child.pid}\\)`));
  // Only the first stack's server runs on this folder; its lock and pid file are untouched.
  expect(processesMentioning(dir).map((l) => Number(l.split(':')[0]))).toEqual([server]);
  expect(JSON.parse(readFileSync(join(data, 'dev.lock'), 'utf8'))).toMatchObject({ pid: first.child.pid });
  expect(serverPid(data)).toBe(server);

  process.kill(-first.child.pid!, 'SIGINT');
  expect(await first.exited()).toBe(0);
  expect(await gone(server)).toBe(true);
});

test('after the stack is killed (SIGKILL), the next start stops the server it left and starts', async () => {
  const env = await devEnv(data);
  const killed = await start(env);
  const orphan = serverPid(data);
  process.kill(killed.child.pid!, 'SIGKILL');
  await killed.exited();
  // The premise: the server outlived the stack, and so did its lock.
  expect(alive(orphan)).toBe(true);
  expect(existsSync(join(data, 'dev.lock'))).toBe(true);

  // Same ports: the orphan holds them, and is recognised from its pid file.
  const next = await start(env);
  expect(next.output()).toContain(`stopped the Temporal dev server (pid ${orphan}`);
  expect(alive(orphan)).toBe(false);
  expect(serverPid(data)).not.toBe(orphan);
  const state = await airlock(env, ['pending', '--json']);
  expect(state.code).toBe(0);

  const server = serverPid(data);
  process.kill(-next.child.pid!, 'SIGINT');
  expect(await next.exited()).toBe(0);
  expect(await gone(server)).toBe(true);
  expect(processesMentioning(dir)).toEqual([]);
});

test('a pid file naming a process that is not this folder\'s server is not acted on; a port held by another process is named', async () => {
  // A live process under the recorded pid (pid reuse, a forged file): never signalled.
  const stranger = spawn('sleep', ['300'], { stdio: 'ignore' });
  try {
    writeFileSync(
      join(data, 'temporal.pid'),
      JSON.stringify({ schemaVersion: 1, pid: stranger.pid, dbFile: join(data, 'temporal.sqlite'), address: '127.0.0.1:1' }),
      { mode: 0o600 },
    );
    const env = await devEnv(data);
    const dev = await start(env);
    expect(alive(stranger.pid!)).toBe(true);
    expect(dev.output()).not.toContain('stopped the Temporal dev server');
    const server = serverPid(data);
    process.kill(-dev.child.pid!, 'SIGINT');
    expect(await dev.exited()).toBe(0);
    expect(await gone(server)).toBe(true);

    // Another program on the gRPC port: the error names it.
    const holder = spawn(process.execPath, ['-e', `require('net').createServer().listen(${env.TEMPORAL_ADDRESS!.split(':')[1]}, '127.0.0.1', () => console.log('listening'))`], {
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    try {
      await new Promise((resolve) => holder.stdout.once('data', resolve));
      const refused = await airlock(env, ['dev']);
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain(`${env.TEMPORAL_ADDRESS} is already in use by pid ${holder.pid}`);
      expect(existsSync(join(data, 'dev.lock'))).toBe(false);
    } finally {
      holder.kill('SIGKILL');
    }
  } finally {
    stranger.kill('SIGKILL');
  }
  expect(processesMentioning(dir)).toEqual([]);
});
