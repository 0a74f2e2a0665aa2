import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { JobHarness } from '../helpers/job-harness';
import { treeListing } from '../helpers/tree-listing';

/**
 * A reversible delete of a folder of 1,000 files, and its undo, with a real
 * tools worker process killed (SIGKILL) right after consuming the nonce and
 * right after the effect (and an overwrite killed half way through writing
 * its file, and a bulk move of 200 files and its undo each killed part
 * way): the card said "reversible" before approval, and
 * whatever the kill interrupted, the folder ends up whole in the holding
 * folder (after the delete) or back at its path (after the undo), once,
 * with one undo record, and nothing of it is lost or duplicated.
 */
let h: JobHarness;

beforeAll(async () => {
  h = await JobHarness.create({
    toolsInProcess: false,
    rules: {
      version: 1,
      rules: [
        { id: 'approve-deletes', version: 1, name: 'Deletes need approval', scope: { tools: ['fs_delete'] }, action: 'request_approval' },
        { id: 'approve-undo', version: 1, name: 'Undos need approval', scope: { tools: ['fs_undo'] }, action: 'request_approval' },
        { id: 'approve-writes', version: 1, name: 'Writes need approval', scope: { tools: ['fs_write'] }, action: 'request_approval' },
        { id: 'approve-bulk-moves', version: 1, name: 'Bulk moves need approval', scope: { tools: ['fs_move_many'] }, action: 'request_approval' },
      ],
    },
  });
});
afterAll(async () => h.close());

/** A tools worker's own data folder, and the environment that starts it with the root kept for undo for 7 days. */
function undoWorker(): { dataDir: string; env: Record<string, string> } {
  const dataDir = mkdtempSync(join(h.dir, 'tools-data-'));
  const config = join(dataDir, 'tools.yaml');
  writeFileSync(config, `version: 1\nroots: [${h.root}]\nundo: { keepDays: 7 }\n`);
  return { dataDir, env: { AIRLOCK_DATA_DIR: dataDir, AIRLOCK_TOOLS_CONFIG: config } };
}

function undoRows(store: string, jobId: string): Array<{ nonce: string; state: string }> {
  const db = new Database(store, { fileMustExist: true });
  try {
    return db.prepare('SELECT nonce, state FROM undo_records WHERE job_id = ?').all(jobId) as Array<{ nonce: string; state: string }>;
  } finally {
    db.close();
  }
}

async function killedDuringDelete(name: string, point: 'after-consume' | 'after-effect' | undefined) {
  const { dataDir, env } = undoWorker();
  const folder = join(h.root, name);
  for (let d = 0; d < 10; d++) {
    mkdirSync(join(folder, `d${d}`), { recursive: true });
    for (let f = 0; f < 100; f++) writeFileSync(join(folder, `d${d}`, `f${f}.txt`), `${name} ${d}/${f}`);
  }
  const before = treeListing(folder);
  const first = h.spawnToolsWorker({ ...env, ...(point !== undefined ? { AIRLOCK_TEST_CRASH_AT: point } : {}) });
  await first.waitFor(/workers polling airlock-tools/);
  const { jobId } = await h.start({
    jobId: `undo-crash-${name}`,
    script: {
      turns: [
        { tool_calls: [{ name: 'fs_delete', arguments: { path: name, recursive: true } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'deleted' } }] },
      ],
    },
  });
  const parked = await h.waitForPending(jobId);
  expect(parked.pending[0]?.undo).toEqual({ reversible: true, keepDays: 7 });
  const show = await h.cli(['show', jobId]);
  expect(show.stdout).toContain(`Delete ${name} (folder, 1000 files, `);
  expect(show.stdout).toContain('— reversible for 7 days (airlock undo)');
  expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: true });
  await killedAt(first, point, env, jobId);

  // Gone from its place, whole in the holding folder, once, with one record.
  expect(existsSync(folder)).toBe(false);
  const rows = undoRows(join(dataDir, 'tools', 'nonces.sqlite'), jobId);
  expect(rows).toEqual([{ nonce: expect.stringMatching(/^[0-9a-f]{32}$/), state: 'held' }]);
  const holding = join(realpathSync(h.root), '.airlock-undo');
  expect(readdirSync(holding)).toContain(rows[0]?.nonce);
  expect(treeListing(join(holding, rows[0]?.nonce ?? '', 'held'))).toEqual(before);
  return { jobId, folder, before, dataDir, env };
}

/** Waits for the worker to pause at `point`, kills it, and lets a fresh one settle the call until the job ends (without a point: the job just ends). */
async function killedAt(first: ReturnType<JobHarness['spawnToolsWorker']>, point: string | undefined, env: Record<string, string>, jobId: string) {
  let worker = first;
  if (point !== undefined) {
    await first.waitFor(new RegExp(`execute paused ${point}`));
    first.child.kill('SIGKILL');
    await first.exited();
    worker = h.spawnToolsWorker(env);
    await worker.waitFor(/workers polling airlock-tools/);
  }
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  worker.child.kill('SIGTERM');
  await worker.exited();
}

async function killedDuringUndo(name: string, point: 'after-consume' | 'after-effect') {
  const { jobId, folder, before, dataDir, env } = await killedDuringDelete(name, undefined);
  const first = h.spawnToolsWorker({ ...env, AIRLOCK_TEST_CRASH_AT: point });
  await first.waitFor(/workers polling airlock-tools/);
  const submitted = await h.airlock.submitUndo({ jobId, callId: 'call_0_0', path: folder, requester: 'alice' });
  expect(submitted.view).toMatchObject({ status: 'parked', toolName: 'fs_undo' });
  const show = await h.cli(['show', submitted.undoJobId]);
  expect(show.stdout).toContain(`Undo call call_0_0 of job ${jobId}: put ${name} in `);
  expect(await h.airlock.decide(submitted.undoJobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: true });
  await killedAt(first, point, env, submitted.undoJobId);

  // Back at its path, whole, once; nothing left held; the record marked restored.
  expect(treeListing(folder)).toEqual(before);
  expect(undoRows(join(dataDir, 'tools', 'nonces.sqlite'), jobId)).toEqual([{ nonce: expect.stringMatching(/^[0-9a-f]{32}$/), state: 'restored' }]);
  expect(readdirSync(join(realpathSync(h.root), '.airlock-undo'))).not.toContain(undoRows(join(dataDir, 'tools', 'nonces.sqlite'), jobId)[0]?.nonce);
  return submitted.undoJobId;
}

test('killed after consuming the nonce, before the move: the retry moves the folder now, once, and records it', async () => {
  const { jobId } = await killedDuringDelete('consumed', 'after-consume');
  expect(h.toolResults(jobId).get('call_0_0')).toMatch(/^deleted .*consumed \(kept for 7 days: airlock undo restores it\)\n/);
});

test('killed after the move, before its record and outcome: the retry finds the held folder and records it, without moving anything again', async () => {
  const { jobId } = await killedDuringDelete('moved', 'after-effect');
  expect(h.toolResults(jobId).get('call_0_0')).toMatch(/^Done: this call's effect is in place/);
});

test('its undo killed after consuming the nonce, before the rename back: the retry puts the folder back now, once', async () => {
  const undoJob = await killedDuringUndo('undo-consumed', 'after-consume');
  expect((await h.result(undoJob)).summary).toMatch(/^restored .*undo-consumed\n/);
});

test('its undo killed after the rename back, before its outcome: the retry finds the folder back and reports it, moving nothing again', async () => {
  const undoJob = await killedDuringUndo('undo-moved', 'after-effect');
  expect((await h.result(undoJob)).summary).toMatch(/^Done: this call's effect is in place/);
});

test('an overwrite kept for undo, its worker killed half way through writing the file: the retry finishes the write, once; its undo puts the content before back byte for byte, on the same inode', async () => {
  const { dataDir, env } = undoWorker();
  const file = join(h.root, 'ledger.csv');
  const old = Buffer.from(Array.from({ length: 20_000 }, (_, i) => `${i},old entry ${i}\n`).join(''));
  writeFileSync(file, old);
  const ino = statSync(file).ino;
  const content = Array.from({ length: 30_000 }, (_, i) => `${i},new ${i}\n`).join('');
  const first = h.spawnToolsWorker({ ...env, AIRLOCK_TEST_CRASH_AT: 'mid-write' });
  await first.waitFor(/workers polling airlock-tools/);
  const { jobId } = await h.start({
    jobId: 'undo-crash-overwrite',
    script: {
      turns: [
        { tool_calls: [{ name: 'fs_write', arguments: { path: 'ledger.csv', content, mode: 'overwrite' } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'written' } }] },
      ],
    },
  });
  const parked = await h.waitForPending(jobId);
  expect(parked.pending[0]?.undo).toEqual({ reversible: true, keepDays: 7 });
  expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: true });
  await first.waitFor(/execute paused mid-write/);
  // Killed with the file truncated and half written.
  expect(statSync(file).size).toBeLessThan(Buffer.byteLength(content));
  first.child.kill('SIGKILL');
  await first.exited();
  const second = h.spawnToolsWorker(env);
  await second.waitFor(/workers polling airlock-tools/);
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(readFileSync(file, 'utf8')).toBe(content);
  expect(statSync(file).ino).toBe(ino);
  expect(undoRows(join(dataDir, 'tools', 'nonces.sqlite'), jobId)).toEqual([{ nonce: expect.stringMatching(/^[0-9a-f]{32}$/), state: 'held' }]);

  const submitted = await h.airlock.submitUndo({ jobId, callId: 'call_0_0', path: file, requester: 'alice' });
  expect(await h.airlock.decide(submitted.undoJobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: true });
  expect(await h.result(submitted.undoJobId)).toMatchObject({ status: 'completed' });
  expect(readFileSync(file).equals(old)).toBe(true);
  expect(statSync(file).ino).toBe(ino);
  expect(undoRows(join(dataDir, 'tools', 'nonces.sqlite'), jobId)).toEqual([{ nonce: expect.stringMatching(/^[0-9a-f]{32}$/), state: 'restored' }]);
  second.child.kill('SIGTERM');
  await second.exited();
});

test('a bulk move of 200 files kept for undo, killed half way, and its undo killed half way: each finished once by a fresh worker; every file back at its place with its bytes and inode', async () => {
  const { dataDir, env } = undoWorker();
  mkdirSync(join(h.root, 'bulk-in'));
  mkdirSync(join(h.root, 'bulk-out'));
  const names = Array.from({ length: 200 }, (_, i) => `track-${String(i).padStart(3, '0')}.flac`);
  names.forEach((n, i) => writeFileSync(join(h.root, 'bulk-in', n), `${n} ${'~'.repeat(i)}`));
  const inodes = () => Object.fromEntries(readdirSync(join(h.root, 'bulk-in')).map((n) => [n, [statSync(join(h.root, 'bulk-in', n)).ino, readFileSync(join(h.root, 'bulk-in', n), 'utf8')]]));
  const before = inodes();
  const moves = names.map((n) => ({ from: `bulk-in/${n}`, to: `bulk-out/${n}` }));

  const first = h.spawnToolsWorker({ ...env, AIRLOCK_TEST_CRASH_AT: 'mid-batch:100' });
  await first.waitFor(/workers polling airlock-tools/);
  const { jobId } = await h.start({
    jobId: 'undo-crash-bulk',
    script: { turns: [{ tool_calls: [{ name: 'fs_move_many', arguments: { moves } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'moved' } }] }] },
  });
  const parked = await h.waitForPending(jobId);
  expect(parked.pending[0]?.undo).toEqual({ reversible: true, keepDays: 7 });
  expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: true });
  await killedAt(first, 'mid-batch:100', env, jobId);
  expect(readdirSync(join(h.root, 'bulk-in'))).toEqual([]);
  expect(readdirSync(join(h.root, 'bulk-out'))).toHaveLength(200);
  expect(undoRows(join(dataDir, 'tools', 'nonces.sqlite'), jobId)).toEqual([{ nonce: expect.stringMatching(/^[0-9a-f]{32}$/), state: 'held' }]);

  const undoer = h.spawnToolsWorker({ ...env, AIRLOCK_TEST_CRASH_AT: 'mid-undo:120' });
  await undoer.waitFor(/workers polling airlock-tools/);
  const submitted = await h.airlock.submitUndo({ jobId, callId: 'call_0_0', path: join(h.root, 'bulk-in', names[0] ?? ''), moves, requester: 'alice' });
  expect(submitted.view).toMatchObject({ status: 'parked', toolName: 'fs_undo' });
  const show = await h.cli(['show', submitted.undoJobId]);
  expect(show.stdout).toContain(`Undo call call_0_0 of job ${jobId}: move back what its bulk move of 200 entries moved`);
  expect(await h.airlock.decide(submitted.undoJobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: true });
  await undoer.waitFor(/execute paused mid-undo:120/);
  // Killed with 120 back and 80 still moved.
  expect(readdirSync(join(h.root, 'bulk-in'))).toHaveLength(120);
  await killedAt(undoer, 'mid-undo:120', env, submitted.undoJobId);
  expect(inodes()).toEqual(before);
  expect(readdirSync(join(h.root, 'bulk-out'))).toEqual([]);
  expect(undoRows(join(dataDir, 'tools', 'nonces.sqlite'), jobId)).toEqual([{ nonce: expect.stringMatching(/^[0-9a-f]{32}$/), state: 'restored' }]);
  expect((await h.result(submitted.undoJobId)).summary).toMatch(/^Done: this call's effect is in place/);
});
