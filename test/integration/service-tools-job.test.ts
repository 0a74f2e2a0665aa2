import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { JobHarness } from '../helpers/job-harness';
import { freePort, killQuietly, processAlive, readPid, waitUntil, writeServiceScript } from '../helpers/service-fixtures';

/**
 * The service tools inside real jobs: a `process` service run for real,
 * restarts parked on approval, re-validated against the service as it is
 * when the reviewer approves.
 */

let h: JobHarness;
let pidFile: string;
let startsFile: string;
let readyFile: string;
let command: string[];
let port: number;
let dir: string;
const leftovers: number[] = [];

beforeAll(async () => {
  port = await freePort();
  dir = mkdtempSync(join(tmpdir(), 'airlock-svc-job-'));
  const script = writeServiceScript(dir);
  pidFile = join(dir, 'web.pid');
  startsFile = join(dir, 'starts');
  readyFile = join(dir, 'ready');
  command = [process.execPath, script, String(port), readyFile];
  h = await JobHarness.create({
    rules: {
      version: 1,
      rules: [{ id: 'gate-service-control', version: 1, name: 'service changes need approval', scope: { categories: ['service_control'] }, action: 'request_approval' }],
    },
    services: {
      web: {
        adapter: 'process',
        command,
        pidFile,
        cwd: dir,
        env: { STARTS_OUT: startsFile },
        health: { type: 'tcp', port, timeoutMs: 1000 },
        stopGraceMs: 5000,
        startTimeoutMs: 300,
      },
    },
  });
});
afterAll(async () => {
  await h.close();
  for (const pid of leftovers) killQuietly(pid);
  if (existsSync(pidFile)) killQuietly(readPid(pidFile));
  rmSync(dir, { recursive: true, force: true });
});
afterEach(async () => {
  await h.terminateRunning();
  if (existsSync(pidFile)) killQuietly(readPid(pidFile));
  for (const f of [pidFile, startsFile, readyFile]) if (existsSync(f)) unlinkSync(f);
});

/** Something accepts connections on the service's port. */
const serving = () =>
  new Promise<boolean>((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });

const starts = () => (existsSync(startsFile) ? readFileSync(startsFile, 'utf8').split('\n').filter((l) => l !== '').map(Number) : []);

/** Starts the service as an operator would (same command, its own pid file entry), healthy or not. */
async function startService(healthy: boolean): Promise<number> {
  if (healthy) writeFileSync(readyFile, '');
  const [program, ...args] = command;
  const child = spawn(program!, args, { detached: true, stdio: 'ignore', env: { STARTS_OUT: startsFile } });
  child.unref();
  leftovers.push(child.pid!);
  writeFileSync(pidFile, `${child.pid}\n`);
  await waitUntil('the service is up', async () => starts().includes(child.pid!) && (!healthy || (await serving())));
  return child.pid!;
}

const restartJob = () =>
  h.start({
    script: {
      turns: [
        { tool_calls: [{ name: 'service_restart', arguments: { service: 'web' } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] },
      ],
    },
  });

test('service_status is allowed: no approval, and the model reads health and pid; an unknown name is an error result', async () => {
  const pid = await startService(true);
  const { jobId } = await h.start({
    script: {
      turns: [
        { tool_calls: [{ name: 'service_status', arguments: { service: 'web' } }, { name: 'service_status', arguments: { service: 'db' } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'looked' } }] },
      ],
    },
  });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  const results = h.toolResults(jobId);
  expect(results.get('call_0_0')).toMatch(new RegExp(`^web \\(process\\): healthy — running as pid ${pid}; tcp 127\\.0\\.0\\.1:\\d+ accepts connections$`));
  expect(results.get('call_0_1')).toMatch(/no service named "db" is configured \(configured: web\)/);
  expect(h.audit(jobId, 'approval_requested')).toHaveLength(0);
  expect(starts()).toEqual([pid]);
});

test('service_restart parks, is approved, and restarts the process once: a new pid, running and healthy', async () => {
  const oldPid = await startService(true);
  const { jobId } = await restartJob();
  const parked = await h.waitForPending(jobId);
  expect(parked.pending[0]).toMatchObject({ toolName: 'service_restart' });
  expect(starts()).toEqual([oldPid]);

  expect((await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).accepted).toBe(true);
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });

  const newPid = readPid(pidFile);
  // The model's answer says what happened when the pid did not change.
  expect({ newPid, result: h.toolResults(jobId).get('call_0_0') }).not.toMatchObject({ newPid: oldPid });
  expect(starts()).toEqual([oldPid, newPid]);
  expect(processAlive(oldPid)).toBe(false);
  expect(processAlive(newPid)).toBe(true);
  expect(h.toolResults(jobId).get('call_0_0')).toMatch(new RegExp(`^web restarted: was pid ${oldPid}; now running as pid ${newPid}; tcp .* accepts connections$`));
  expect(h.audit(jobId, 'tool_executed')).toHaveLength(1);
});

test('unhealthy when parked, healthy again when approved: not restarted, and the model is told why', async () => {
  const pid = await startService(false);
  const { jobId } = await restartJob();
  await h.waitForPending(jobId);
  expect(await serving()).toBe(false);
  writeFileSync(readyFile, '');
  await waitUntil('the service serves again', serving);

  expect((await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).accepted).toBe(true);
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(h.toolResults(jobId).get('call_0_0')).toMatch(
    new RegExp(`^Not executed, and not needed any more: web was unhealthy when the restart was approved and is healthy again now \\(running as pid ${pid}; .*\\); not restarted\\.`),
  );
  expect(readPid(pidFile)).toBe(pid);
  expect(starts()).toEqual([pid]);
  expect(processAlive(pid)).toBe(true);
});

test('killed and restarted by someone else after approval was asked: refused, and the newcomer is not touched', async () => {
  const approvedPid = await startService(true);
  const { jobId } = await restartJob();
  await h.waitForPending(jobId);
  killQuietly(approvedPid);
  await waitUntil('the approved process is gone', () => !processAlive(approvedPid));
  const newcomer = await startService(true);

  expect((await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).accepted).toBe(true);
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  const result = h.toolResults(jobId).get('call_0_0')!;
  expect(result).toMatch(/^Not executed/);
  expect(result).toContain(`web is not what was approved: the process was replaced: approved pid ${approvedPid}, now pid ${newcomer}`);
  expect(readPid(pidFile)).toBe(newcomer);
  expect(processAlive(newcomer)).toBe(true);
  expect(starts()).toEqual([approvedPid, newcomer]);
  expect(h.audit(jobId, 'tool_executed')).toHaveLength(0);
});
