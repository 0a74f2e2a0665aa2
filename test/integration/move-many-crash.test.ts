import { createHash, generateKeyPairSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultRules } from '../../core/policy/default-rules';
import { JobHarness } from '../helpers/job-harness';

/**
 * A bulk move of 200 files, its real tools worker process killed with
 * SIGKILL in the middle: 100 entries moved and journaled, the 101st renamed
 * but not yet journaled, 99 untouched. A fresh worker picks the retried
 * attempt up. What users rely on: every file is in exactly one place, with
 * its content, and the call says what moved.
 */
const COUNT = 200;
const PAUSE_AFTER = 100;
let h: JobHarness;
const alice = generateKeyPairSync('ed25519');

beforeAll(async () => {
  h = await JobHarness.create({ toolsInProcess: false, rules: defaultRules, reviewerKeys: new Map([['alice', alice.publicKey]]) });
});
afterAll(async () => h.close());

const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

/** Name → content digest of every file in a folder. */
function digests(dir: string): Map<string, string> {
  return new Map(readdirSync(dir).map((name) => [name, sha(readFileSync(join(dir, name)))]));
}

/** Starts a 200-entry bulk move on a worker that pauses mid-batch, kills it there, runs `meanwhile`, and lets a fresh worker finish the job. */
async function killedMidBatch(name: string, meanwhile: (from: string) => void = () => undefined) {
  const from = join(h.root, `incoming-${name}`);
  const to = join(h.root, `library-${name}`);
  mkdirSync(from);
  mkdirSync(to);
  const names = Array.from({ length: COUNT }, (_, i) => `episode-${String(i).padStart(3, '0')}.mkv`);
  names.forEach((n, i) => writeFileSync(join(from, n), `${n} ${'#'.repeat(i)}`));
  const original = digests(from);
  expect(original.size).toBe(COUNT);

  const dataDir = mkdtempSync(join(h.dir, 'tools-data-'));
  const first = h.spawnToolsWorker({ AIRLOCK_DATA_DIR: dataDir, AIRLOCK_TEST_CRASH_AT: `mid-batch:${PAUSE_AFTER}` });
  await first.waitFor(/workers polling airlock-tools/);
  const moves = names.map((n) => ({ from: `incoming-${name}/${n}`, to: `library-${name}/${n}` }));
  const { jobId } = await h.start({
    jobId: `move-many-crash-${name}`,
    script: {
      turns: [{ tool_calls: [{ name: 'fs_move_many', arguments: { moves } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'moved' } }] }],
    },
  });
  await h.waitForPending(jobId);
  expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice', signingKey: alice.privateKey })).toMatchObject({ accepted: true });
  await first.waitFor(new RegExp(`execute paused mid-batch:${PAUSE_AFTER}`));
  // Paused with entry 101 renamed and its `moved` record not yet written.
  expect(readdirSync(to)).toHaveLength(PAUSE_AFTER + 1);
  expect(readdirSync(from)).toHaveLength(COUNT - PAUSE_AFTER - 1);
  first.child.kill('SIGKILL');
  await first.exited();
  meanwhile(from);

  const second = h.spawnToolsWorker({ AIRLOCK_DATA_DIR: dataDir });
  await second.waitFor(/workers polling airlock-tools/);
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  second.child.kill('SIGTERM');
  await second.exited();
  return { jobId, from, to, names, original };
}

test('killed mid-batch, the retry finishes the rest once: none lost, none duplicated, and the call says what moved when', async () => {
  const { jobId, from, to, original } = await killedMidBatch('plain');

  // Both folders listed: every file in exactly one of them, with the content it had, and as many as there were.
  const left = digests(from);
  const arrived = digests(to);
  expect(left.size + arrived.size).toBe(COUNT);
  expect([...left.keys()].filter((name) => arrived.has(name))).toEqual([]);
  expect(new Map([...left, ...arrived])).toEqual(original);
  // Here nothing interfered, so everything moved.
  expect(arrived).toEqual(original);

  const text = h.toolResults(jobId).get('call_0_0') ?? '';
  expect(text).toMatch(new RegExp(`^moved ${COUNT} of ${COUNT} entries: ${PAUSE_AFTER + 1} before an interruption, ${COUNT - PAUSE_AFTER - 1} now`));
  expect(h.audit(jobId, 'tool_executed')).toEqual([expect.objectContaining({ data: expect.objectContaining({ ok: true, reconciled: 'ran_now' }) })]);
  expect((await h.state(jobId)).counters.toolCallsExecuted).toBe(1);
});

test('an entry replaced while the worker was dead is left alone and named; the rest are finished once', async () => {
  const replaced = 'episode-150.mkv';
  const { jobId, from, to, original } = await killedMidBatch('tampered', (folder) => {
    // Same bytes, another file: not the entry that was approved and planned.
    const path = join(folder, replaced);
    const bytes = readFileSync(path);
    rmSync(path);
    writeFileSync(path, bytes);
  });
  const left = digests(from);
  const arrived = digests(to);
  expect([...left.keys()]).toEqual([replaced]);
  expect(arrived.size).toBe(COUNT - 1);
  expect([...left.keys()].filter((name) => arrived.has(name))).toEqual([]);
  expect(new Map([...left, ...arrived])).toEqual(original);
  const text = h.toolResults(jobId).get('call_0_0') ?? '';
  expect(text).toMatch(new RegExp(`^moved ${COUNT - 1} of ${COUNT} entries: ${PAUSE_AFTER + 1} before an interruption, ${COUNT - PAUSE_AFTER - 2} now\\n`));
  expect(text).toContain(`left alone, neither moved nor as planned (1; check them): ${join(from, replaced)} → ${join(to, replaced)}`);
  expect(h.audit(jobId, 'tool_executed')).toEqual([expect.objectContaining({ data: expect.objectContaining({ ok: false, reconciled: 'ran_now' }) })]);
});
