import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
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

/**
 * README: a retry settles a consumed nonce once its holder has been silent
 * this long (the tools worker's `claimStaleMs`); the 15 s heartbeat timeout
 * has Temporal retry a dead worker's attempt before then.
 */
const CLAIM_STALE_MS = 20_000;

interface NonceRow {
  /** When the attempt holding the nonce last showed it was alive (the store's clock, ms): consumed, renewed at every beat, claimed. */
  readonly aliveAt: number;
  readonly outcome: { readonly ok: boolean; readonly reconciled?: string } | null;
}

/** The job's row in a tools worker's nonce store; undefined while there is none. */
function nonceRow(store: string, jobId: string): NonceRow | undefined {
  const db = new Database(store, { fileMustExist: true });
  try {
    const row = db.prepare('SELECT alive_at, outcome FROM consumed_nonces WHERE job_id = ?').get(jobId) as { alive_at: number | null; outcome: string | null } | undefined;
    if (row === undefined || row.alive_at === null) return undefined;
    return { aliveAt: row.alive_at, outcome: row.outcome === null ? null : (JSON.parse(row.outcome) as NonceRow['outcome']) };
  } finally {
    db.close();
  }
}

/**
 * Waits until the store records the call's outcome. The mechanism bounds
 * when: Temporal retries the dead holder's attempt at its heartbeat
 * timeout, and the first retry after the holder has been silent
 * claimStaleMs settles it. Twice that is a failure (a heartbeat timeout of
 * a minute, say), said as such rather than as jest's timeout.
 */
async function settledRow(store: string, jobId: string, silentSince: number): Promise<NonceRow> {
  for (;;) {
    const row = nonceRow(store, jobId);
    if (row?.outcome != null) return row;
    if (Date.now() - silentSince > 2 * CLAIM_STALE_MS) {
      throw new Error(
        `job ${jobId}: no retry settled the call within 2 × claimStaleMs (${(2 * CLAIM_STALE_MS) / 1000} s) of its killed holder's last renewal; ` +
          `a dead tools worker must be noticed at the heartbeat timeout (seconds), not later. Store row now: ${JSON.stringify(row)}`,
      );
    }
    await new Promise((r) => setTimeout(r, 250));
  }
}

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
  // The killed holder's last sign of life, as its store recorded it.
  const silentSince = nonceRow(store, jobId)?.aliveAt;
  if (silentSince === undefined) throw new Error(`the killed worker left no consumed nonce of ${jobId} in ${store}`);
  if (options.deleteStore === true) for (const f of [store, `${store}-wal`, `${store}-shm`]) rmSync(f, { force: true });

  const second = startToolsWorker(dataDir);
  await second.waitFor(/workers polling airlock-tools/);
  const settled = await settledRow(store, jobId, silentSince);
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  second.child.kill('SIGTERM');
  await second.exited();
  // How long the holder had been silent when a retry took the call over (claimed the nonce, or consumed it in a lost store).
  const silentFor = settled.aliveAt - silentSince;
  // Never while the holder could still be alive: only once it had been silent claimStaleMs (a lost store has no holder to wait for)...
  if (options.deleteStore !== true) expect(silentFor).toBeGreaterThanOrEqual(CLAIM_STALE_MS);
  // ...and by the first retries after that: the heartbeat timeout noticed the dead worker in seconds.
  expect(silentFor).toBeLessThan(2 * CLAIM_STALE_MS);
  // Exactly once, whatever happened.
  expect(readFileSync(file, 'utf8')).toBe('line 1\nline 2\n');
  return { jobId, file, second, stored: settled.outcome };
}

test('killed after consuming the nonce, before the effect: the retry finds the target as approved and runs it now, once', async () => {
  const { jobId, file, stored } = await crashAndRecover('consumed', 'after-consume');
  expect(stored).toMatchObject({ ok: true, reconciled: 'ran_now' });
  expect(h.toolResults(jobId).get('call_0_0')).toBe(`wrote 7 bytes to ${file} (append)\n${Texts.reconciledRanNow}`);
  expect(h.audit(jobId, 'tool_executed')).toEqual([expect.objectContaining({ data: expect.objectContaining({ ok: true, replayed: false, reconciled: 'ran_now' }) })]);
  const view = await h.state(jobId);
  expect(view.reconciled).toEqual([{ callId: 'call_0_0', toolName: 'fs_write', reconciled: 'ran_now', ok: true }]);
  expect(view.counters.toolCallsExecuted).toBe(1);
  const show = await h.cli(['show', jobId]);
  expect(show.stdout).toContain('fs_write (call call_0_0): an attempt was interrupted before its effect; the target was unchanged, so it ran on retry, once');
});

test('killed after the effect, before recording it: the retry sees the effect in place and reports that it ran, without running it again', async () => {
  const { jobId, stored } = await crashAndRecover('effected', 'after-effect');
  expect(stored).toMatchObject({ ok: true, reconciled: 'ran_before' });
  const text = h.toolResults(jobId).get('call_0_0') ?? '';
  expect(text).toMatch(/^Done: this call's effect is in place \(.*effected\.log ends with the appended 7 bytes once\)/);
  expect(text).not.toMatch(/Not executed|could not be run|Error/);
  expect(h.audit(jobId, 'tool_executed')).toEqual([expect.objectContaining({ data: expect.objectContaining({ ok: true, replayed: true, reconciled: 'ran_before' }) })]);
  expect((await h.state(jobId)).reconciled).toEqual([{ callId: 'call_0_0', toolName: 'fs_write', reconciled: 'ran_before', ok: true }]);
  const show = await h.cli(['show', jobId]);
  expect(show.stdout).toContain('fs_write (call call_0_0): its attempt was interrupted before reporting; the target shows its effect');
});

test('killed after the effect and the nonce store deleted: the new worker says the store was lost, and the retry reconciles instead of running again', async () => {
  const { jobId, second, stored } = await crashAndRecover('lost-store', 'after-effect', { deleteStore: true });
  expect(stored).toMatchObject({ ok: true, reconciled: 'ran_before' });
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
