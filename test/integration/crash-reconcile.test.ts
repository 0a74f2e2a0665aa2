import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Texts } from '../../core/job/texts';
import { JobHarness } from '../helpers/job-harness';
import type { Spawned } from '../helpers/processes';

/**
 * A real tools worker process killed with SIGKILL at the worst moments of
 * an approved call: after consuming the nonce (before the effect), and
 * after the effect (before its outcome is recorded), once with the nonce
 * store deleted as well. A fresh worker picks the retried attempt up;
 * what users rely on: the effect happened exactly once, and what the
 * model, `show` and the audit say is true.
 */
let h: JobHarness;
/** A tools worker on its own data folder; with `crashAt`, its `execute` stops there for the test to kill it. */
function startToolsWorker(dataDir: string, crashAt?: 'after-consume' | 'after-effect'): Spawned {
  return h.spawnToolsWorker({ AIRLOCK_DATA_DIR: dataDir, ...(crashAt !== undefined ? { AIRLOCK_TEST_CRASH_AT: crashAt } : {}) });
}

beforeAll(async () => {
  h = await JobHarness.create({
    toolsInProcess: false,
    rules: {
      version: 1,
      rules: [{ id: 'approve-writes', version: 1, name: 'Writes need approval', scope: { tools: ['fs_write'] }, action: 'request_approval' }],
    },
  });
});
afterAll(async () => h.close());

async function crashAndRecover(name: string, point: 'after-consume' | 'after-effect', options: { deleteStore?: boolean } = {}) {
  const dataDir = mkdtempSync(join(h.dir, 'tools-data-'));
  const file = join(h.root, `${name}.log`);
  writeFileSync(file, 'line 1\n');
  const first = startToolsWorker(dataDir, point);
  await first.waitFor(/workers polling airlock-tools/);
  const { jobId } = await h.start({
    jobId: `crash-${name}`,
    script: {
      turns: [
        { tool_calls: [{ name: 'fs_write', arguments: { path: `${name}.log`, content: 'line 2\n', mode: 'append' } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'appended' } }] },
      ],
    },
  });
  await h.waitForPending(jobId);
  expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: true });
  await first.waitFor(new RegExp(`execute paused ${point}`));
  expect(readFileSync(file, 'utf8')).toBe(point === 'after-effect' ? 'line 1\nline 2\n' : 'line 1\n');
  first.child.kill('SIGKILL');
  await first.exited();
  const store = join(dataDir, 'tools', 'nonces.sqlite');
  if (options.deleteStore === true) for (const f of [store, `${store}-wal`, `${store}-shm`]) rmSync(f, { force: true });

  const killedAt = Date.now();
  const second = startToolsWorker(dataDir);
  await second.waitFor(/workers polling airlock-tools/);
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  // Generous: the point is seconds of heartbeat timeout, not the 10-minute start-to-close timeout.
  expect(Date.now() - killedAt).toBeLessThan(4 * 60_000);
  second.child.kill('SIGTERM');
  await second.exited();
  // Exactly once, whatever happened.
  expect(readFileSync(file, 'utf8')).toBe('line 1\nline 2\n');
  return { jobId, file, second };
}

test('killed after consuming the nonce, before the effect: the retry finds the target as approved and runs it now, once', async () => {
  const { jobId, file } = await crashAndRecover('consumed', 'after-consume');
  expect(h.toolResults(jobId).get('call_0_0')).toBe(`wrote 7 bytes to ${file} (append)\n${Texts.reconciledRanNow}`);
  expect(h.audit(jobId, 'tool_executed')).toEqual([expect.objectContaining({ data: expect.objectContaining({ ok: true, replayed: false, reconciled: 'ran_now' }) })]);
  const view = await h.state(jobId);
  expect(view.reconciled).toEqual([{ callId: 'call_0_0', toolName: 'fs_write', reconciled: 'ran_now', ok: true }]);
  expect(view.counters.toolCallsExecuted).toBe(1);
  const show = await h.cli(['show', jobId]);
  expect(show.stdout).toContain('fs_write (call call_0_0): an attempt was interrupted before its effect; the target was unchanged, so it ran on retry, once');
});

test('killed after the effect, before recording it: the retry sees the effect in place and reports that it ran, without running it again', async () => {
  const { jobId } = await crashAndRecover('effected', 'after-effect');
  const text = h.toolResults(jobId).get('call_0_0') ?? '';
  expect(text).toMatch(/^Done: this call's effect is in place \(.*effected\.log ends with the appended 7 bytes once\)/);
  expect(text).not.toMatch(/Not executed|could not be run|Error/);
  expect(h.audit(jobId, 'tool_executed')).toEqual([expect.objectContaining({ data: expect.objectContaining({ ok: true, replayed: true, reconciled: 'ran_before' }) })]);
  expect((await h.state(jobId)).reconciled).toEqual([{ callId: 'call_0_0', toolName: 'fs_write', reconciled: 'ran_before', ok: true }]);
  const show = await h.cli(['show', jobId]);
  expect(show.stdout).toContain('fs_write (call call_0_0): its attempt was interrupted before reporting; the target shows its effect');
});

test('killed after the effect and the nonce store deleted: the new worker says the store was lost, and the retry reconciles instead of running again', async () => {
  const { jobId, second } = await crashAndRecover('lost-store', 'after-effect', { deleteStore: true });
  expect(second.output()).toMatch(/the nonce store .*nonces\.sqlite was missing although store [0-9a-f-]{36} existed there; started a new store/);
  expect(h.toolResults(jobId).get('call_0_0')).toMatch(/^Done: this call's effect is in place/);
  expect(h.audit(jobId, 'tool_executed')).toEqual([expect.objectContaining({ data: expect.objectContaining({ ok: true, reconciled: 'ran_before' }) })]);
});

test('a tools worker whose nonce store is not a database stops at start with one line naming the file and what to do', async () => {
  const dataDir = mkdtempSync(join(h.dir, 'tools-data-'));
  const first = startToolsWorker(dataDir);
  await first.waitFor(/workers polling airlock-tools/);
  first.child.kill('SIGTERM');
  await first.exited();
  const store = join(dataDir, 'tools', 'nonces.sqlite');
  for (const f of [`${store}-wal`, `${store}-shm`]) rmSync(f, { force: true });
  writeFileSync(store, 'garbage, not SQLite '.repeat(100));
  const broken = startToolsWorker(dataDir);
  expect(await broken.exited()).toBe(1);
  const lines = broken.output().trim().split('\n');
  expect(lines).toEqual([
    `airlock worker: the nonce store ${store} is not a readable SQLite database (file is not a database): restore it from a backup, or move it away to start an empty store, knowing that retried calls will then be reconciled against the file system`,
  ]);
});
