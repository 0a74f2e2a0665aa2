import { existsSync, mkdirSync, mkdtempSync, readdirSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { JobHarness } from '../helpers/job-harness';
import { treeListing } from '../helpers/tree-listing';

/**
 * A reversible delete of a folder of 1,000 files, with a real tools worker
 * process killed (SIGKILL) right after consuming the nonce and right after
 * the move: the card said "reversible" before approval, and whatever the
 * kill interrupted, the folder ends up whole in the holding folder, once,
 * with one undo record, and nothing of it is lost or duplicated.
 */
let h: JobHarness;

beforeAll(async () => {
  h = await JobHarness.create({
    toolsInProcess: false,
    rules: {
      version: 1,
      rules: [{ id: 'approve-deletes', version: 1, name: 'Deletes need approval', scope: { tools: ['fs_delete'] }, action: 'request_approval' }],
    },
  });
});
afterAll(async () => h.close());



function undoRows(store: string, jobId: string): Array<{ nonce: string; state: string }> {
  const db = new Database(store, { fileMustExist: true });
  try {
    return db.prepare('SELECT nonce, state FROM undo_records WHERE job_id = ?').all(jobId) as Array<{ nonce: string; state: string }>;
  } finally {
    db.close();
  }
}

async function killedDuringDelete(name: string, point: 'after-consume' | 'after-effect') {
  const dataDir = mkdtempSync(join(h.dir, 'tools-data-'));
  const config = join(dataDir, 'tools.yaml');
  writeFileSync(config, `version: 1\nroots: [${h.root}]\nundo: { keepDays: 7 }\n`);
  const folder = join(h.root, name);
  for (let d = 0; d < 10; d++) {
    mkdirSync(join(folder, `d${d}`), { recursive: true });
    for (let f = 0; f < 100; f++) writeFileSync(join(folder, `d${d}`, `f${f}.txt`), `${name} ${d}/${f}`);
  }
  const before = treeListing(folder);
  const env = { AIRLOCK_DATA_DIR: dataDir, AIRLOCK_TOOLS_CONFIG: config };
  const first = h.spawnToolsWorker({ ...env, AIRLOCK_TEST_CRASH_AT: point });
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
  await first.waitFor(new RegExp(`execute paused ${point}`));
  first.child.kill('SIGKILL');
  await first.exited();

  const second = h.spawnToolsWorker(env);
  await second.waitFor(/workers polling airlock-tools/);
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  second.child.kill('SIGTERM');
  await second.exited();

  // Gone from its place, whole in the holding folder, once, with one record.
  expect(existsSync(folder)).toBe(false);
  const rows = undoRows(join(dataDir, 'tools', 'nonces.sqlite'), jobId);
  expect(rows).toEqual([{ nonce: expect.stringMatching(/^[0-9a-f]{32}$/), state: 'held' }]);
  const holding = join(realpathSync(h.root), '.airlock-undo');
  expect(readdirSync(holding)).toContain(rows[0]?.nonce);
  expect(treeListing(join(holding, rows[0]?.nonce ?? '', 'held'))).toEqual(before);
  return jobId;
}

test('killed after consuming the nonce, before the move: the retry moves the folder now, once, and records it', async () => {
  const jobId = await killedDuringDelete('consumed', 'after-consume');
  expect(h.toolResults(jobId).get('call_0_0')).toMatch(/^deleted .*consumed \(kept for 7 days: airlock undo restores it\)\n/);
});

test('killed after the move, before its record and outcome: the retry finds the held folder and records it, without moving anything again', async () => {
  const jobId = await killedDuringDelete('moved', 'after-effect');
  expect(h.toolResults(jobId).get('call_0_0')).toMatch(/^Done: this call's effect is in place/);
});
