import { spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { recheckServiceAction } from '../../core/tools/service-state';
import { ServiceError, ServiceIdentityChanged } from '../../host/services/adapter';
import { Services } from '../../host/services/services';
import { freePort, killQuietly, processAlive, processServiceConfig, readPid, waitUntil, writeServiceScript } from '../helpers/service-fixtures';

let dir: string;
let script: string;
let pidFile: string;
const leftovers: number[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-svc-'));
  script = writeServiceScript(dir);
  pidFile = join(dir, 'web.pid');
});
afterEach(() => {
  if (existsSync(pidFile)) leftovers.push(readPid(pidFile));
  for (const pid of leftovers.splice(0)) killQuietly(pid);
  rmSync(dir, { recursive: true, force: true });
});

async function webService(options: { port?: number; ready?: string; env?: Record<string, string>; stopGraceMs?: number; startTimeoutMs?: number; logFile?: string } = {}) {
  const port = options.port ?? (await freePort());
  const command = [process.execPath, script, String(port), ...(options.ready !== undefined ? [options.ready] : [])];
  const config = processServiceConfig('web', {
    command,
    pidFile,
    cwd: dir,
    env: options.env ?? {},
    health: { type: 'tcp', host: '127.0.0.1', port, timeoutMs: 1000 },
    stopGraceMs: options.stopGraceMs ?? 5_000,
    startTimeoutMs: options.startTimeoutMs ?? 10_000,
    ...(options.logFile !== undefined ? { logFile: options.logFile } : {}),
  });
  return { adapter: Services.fromConfig(config).get('web'), command, port };
}

/** Starts the service the way someone other than airlock would: same command, own pid file entry. */
function startBySomeoneElse(command: string[]): number {
  const [program, ...args] = command;
  const child = spawn(program!, args, { detached: true, stdio: 'ignore' });
  child.unref();
  leftovers.push(child.pid!);
  writeFileSync(pidFile, `${child.pid}\n`);
  return child.pid!;
}

test('start from stopped: detached in its own process group, pid file written, healthy by its TCP check', async () => {
  const { adapter } = await webService();
  const before = await adapter.status();
  expect(before).toMatchObject({ identity: null, health: 'stopped', instance: null });
  expect(before.detail).toMatch(/no pid file/);

  const after = await adapter.start(null);
  expect(after.health).toBe('healthy');
  expect(after.identity).toMatchObject({ adapter: 'process', pid: readPid(pidFile) });
  const pid = readPid(pidFile);
  expect(processAlive(pid)).toBe(true);
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8').slice(readFileSync(`/proc/${pid}/stat`, 'utf8').lastIndexOf(')') + 2).split(' ');
  // Fields 5 and 6: process group and session are its own, not the worker's.
  expect(Number(stat[2])).toBe(pid);
  expect(Number(stat[3])).toBe(pid);
});

test('restart really stops and starts: a new pid, the old one gone, the service running and healthy', async () => {
  const { adapter } = await webService();
  const first = await adapter.start(null);
  const oldPid = readPid(pidFile);
  const approved = await adapter.status();
  expect(approved.identity).toEqual(first.identity);

  const after = await adapter.restart(approved.identity);
  const newPid = readPid(pidFile);
  expect(newPid).not.toBe(oldPid);
  expect(processAlive(oldPid)).toBe(false);
  expect(processAlive(newPid)).toBe(true);
  expect(after).toMatchObject({ health: 'healthy', identity: { pid: newPid } });
  expect(after.instance).not.toBe(approved.instance);
});

test('a service killed and restarted by someone else after approval is refused, and the newcomer is not touched', async () => {
  const { adapter, command } = await webService();
  await adapter.start(null);
  const approved = await adapter.status();
  const approvedPid = readPid(pidFile);

  killQuietly(approvedPid);
  await waitUntil('the approved process is gone', () => !processAlive(approvedPid));
  const newcomer = startBySomeoneElse(command);
  await waitUntil('the newcomer serves', async () => (await adapter.status()).health === 'healthy');

  const now = await adapter.status();
  expect(recheckServiceAction('restart', approved, now)).toEqual({
    verdict: 'refuse',
    reason: expect.stringMatching(new RegExp(`the process was replaced: approved pid ${approvedPid}, now pid ${newcomer}`)),
  });
  await expect(adapter.restart(approved.identity)).rejects.toThrow(ServiceIdentityChanged);
  await expect(adapter.stop(approved.identity)).rejects.toThrow(/not what was approved/);
  expect(processAlive(newcomer)).toBe(true);
  expect(readPid(pidFile)).toBe(newcomer);
});

test('the same pid with another start time (a reused pid) is another process: refused, untouched', async () => {
  const { adapter } = await webService();
  await adapter.start(null);
  const now = await adapter.status();
  if (now.identity?.adapter !== 'process') throw new Error('expected a process identity');
  const reused = { ...now.identity, startTicks: String(Number(now.identity.startTicks) - 1) };
  await expect(adapter.restart(reused)).rejects.toThrow(/pid \d+ is another process now \(its start time differs\)/);
  expect(processAlive(now.identity.pid)).toBe(true);
  expect(readPid(pidFile)).toBe(now.identity.pid);
});

test('a stale pid file naming another program is not that service: the other program is never signalled', async () => {
  const { adapter } = await webService();
  const other = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1 << 30)'], { detached: true, stdio: 'ignore' });
  other.unref();
  leftovers.push(other.pid!);
  writeFileSync(pidFile, `${other.pid}\n`);

  const seen = await adapter.status();
  expect(seen).toMatchObject({ identity: null, health: 'stopped' });
  expect(seen.detail).toMatch(/runs another program \(stale pid file\)/);
  const after = await adapter.restart(seen.identity);
  expect(after.health).toBe('healthy');
  expect(readPid(pidFile)).not.toBe(other.pid);
  expect(processAlive(other.pid!)).toBe(true);
});

/**
 * A service that ignores SIGTERM, and a child in its group that does too:
 * each notes in the record file that it is ready, each SIGTERM it gets and
 * each 0.1 s round it lives on. Only SIGKILL ends them.
 */
const STUBBORN_SOURCE = `
const fs = require('node:fs');
const net = require('node:net');
const { spawn } = require('node:child_process');
const [role, port, record] = process.argv.slice(2);
const note = (what) => fs.appendFileSync(record, what + ' ' + process.pid + '\\n');
process.on('SIGTERM', () => note('TERM'));
setInterval(() => note('alive'), 100);
if (role === 'service') {
  spawn(process.execPath, [__filename, 'child', port, record], { stdio: 'ignore' });
  net.createServer((c) => { c.on('error', () => {}); c.end('ok\\n'); }).listen(Number(port), '127.0.0.1');
}
note('ready');
`;

test('a process that ignores SIGTERM is sent SIGTERM first and killed after the grace period, with the children of its group', async () => {
  const program = join(dir, 'stubborn-service.js');
  writeFileSync(program, STUBBORN_SOURCE);
  const record = join(dir, 'signals');
  const port = await freePort();
  const config = processServiceConfig('web', {
    command: [process.execPath, program, 'service', String(port), record],
    pidFile,
    cwd: dir,
    health: { type: 'tcp', host: '127.0.0.1', port, timeoutMs: 1000 },
    // Long enough, on a busy machine too, for both to note SIGTERM and live on a few rounds.
    stopGraceMs: 2_000,
    startTimeoutMs: 10_000,
  });
  const adapter = Services.fromConfig(config).get('web');
  await adapter.start(null);
  const pid = readPid(pidFile);
  const lines = () => readFileSync(record, 'utf8').trim().split('\n');
  const ready = () => lines().filter((line) => line.startsWith('ready ')).map((line) => Number(line.slice('ready '.length)));
  await waitUntil('the service and its child are ready', () => existsSync(record) && ready().length === 2);
  const grandchild = ready().find((p) => p !== pid)!;
  leftovers.push(grandchild);
  expect(ready()).toContain(pid);
  expect(processAlive(grandchild)).toBe(true);

  const after = await adapter.stop(await adapter.status().then((s) => s.identity));
  expect(after).toMatchObject({ health: 'stopped', identity: null });
  expect(processAlive(pid)).toBe(false);
  await waitUntil('the child of the group is gone', () => !processAlive(grandchild), 5_000);
  const seen = lines();
  for (const p of [pid, grandchild]) {
    // SIGTERM reached it while it ran (its handler wrote this) ...
    const term = seen.indexOf(`TERM ${p}`);
    expect(term).toBeGreaterThan(-1);
    // ... it was left to go on after it (two 0.1 s rounds of a 2 s grace period), not killed along with it ...
    expect(seen.slice(term + 1).filter((line) => line === `alive ${p}`).length).toBeGreaterThanOrEqual(2);
    // ... and it is gone anyway: only SIGKILL ends it.
    expect(processAlive(p)).toBe(false);
  }
  expect(existsSync(pidFile)).toBe(false);
});

test('the started process gets only its configured environment, none of the worker\'s', async () => {
  process.env.AIRLOCK_TEST_CANARY = 'canary-5f1e';
  try {
    const envOut = join(dir, 'env.json');
    const { adapter } = await webService({ env: { ENV_OUT: envOut, GREETING: 'hello' } });
    await adapter.start(null);
    await waitUntil('the service wrote its environment', () => existsSync(envOut));
    const seen = JSON.parse(readFileSync(envOut, 'utf8')) as Record<string, string>;
    expect(seen.GREETING).toBe('hello');
    expect(typeof seen.PATH).toBe('string');
    expect(JSON.stringify(seen)).not.toContain('canary-5f1e');
  } finally {
    delete process.env.AIRLOCK_TEST_CANARY;
  }
});

test('a program that exits at once: a clear error, no pid file left behind', async () => {
  const logFile = join(dir, 'web.log');
  const { adapter } = await webService({ env: { EXIT_AT_ONCE: '3' }, logFile });
  await expect(adapter.start(null)).rejects.toThrow(new RegExp(`web: pid \\d+ exited with code 3 right after it was started \\(see ${logFile}\\)`));
  expect(existsSync(pidFile)).toBe(false);
  expect((await adapter.status()).health).toBe('stopped');
});

test('unhealthy at approval and healthy again now: the restart is not needed, and the process is left as it is', async () => {
  const ready = join(dir, 'ready');
  const { adapter } = await webService({ ready, startTimeoutMs: 300 });
  const started = await adapter.start(null);
  // Not listening until the ready file exists: running but unhealthy.
  expect(started.health).toBe('unhealthy');
  const approved = await adapter.status();
  writeFileSync(ready, '');
  await waitUntil('healthy', async () => (await adapter.status()).health === 'healthy');
  const now = await adapter.status();
  expect(recheckServiceAction('restart', approved, now)).toEqual({
    verdict: 'not_needed',
    reason: expect.stringMatching(/^web was unhealthy when the restart was approved and is healthy again now \(running as pid \d+; tcp .* accepts connections\); not restarted$/),
  });
  expect(now.identity).toEqual(approved.identity);
});

test('bad pid files give one clear line', async () => {
  const { adapter } = await webService();
  writeFileSync(pidFile, 'twelve\n');
  await expect(adapter.status()).rejects.toThrow(new ServiceError('web', `its pid file ${pidFile} does not hold a pid ("twelve"); fix or remove it`));
  writeFileSync(pidFile, '1\n');
  await expect(adapter.status()).rejects.toThrow(/names pid 1, which is never a service airlock may signal/);
});

test('an http health check: 2xx/3xx is healthy, anything else (or no answer) is not', async () => {
  let status = 503;
  const server = createServer((_req, res) => res.writeHead(status).end());
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  try {
    const address = server.address();
    if (typeof address !== 'object' || address === null) throw new Error('no address');
    const url = `http://127.0.0.1:${address.port}/health`;
    const config = processServiceConfig('api', {
      command: [process.execPath, script, String(await freePort())],
      pidFile,
      health: { type: 'http', url, timeoutMs: 1000 },
      startTimeoutMs: 200,
    });
    const adapter = Services.fromConfig(config).get('api');
    const started = await adapter.start(null);
    expect(started).toMatchObject({ health: 'unhealthy', detail: expect.stringContaining(`GET ${url}: 503`) });
    status = 204;
    expect(await adapter.status()).toMatchObject({ health: 'healthy', detail: expect.stringContaining(`GET ${url}: 204`) });
    server.close();
    server.closeAllConnections();
    await new Promise((r) => setTimeout(r, 50));
    expect((await adapter.status()).health).toBe('unhealthy');
  } finally {
    server.close();
  }
});
