import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultRules } from '../../core/policy/default-rules';
import { JobHarness } from '../helpers/job-harness';

/**
 * A bulk move through a real job under the built-in rules: it parks, the
 * reviewer sees the set (count, total size, first entries), a signed
 * approval moves every entry; a source changed after approval moves none.
 */
let h: JobHarness;
const alice = generateKeyPairSync('ed25519');

beforeAll(async () => {
  h = await JobHarness.create({ rules: defaultRules, reviewerKeys: new Map([['alice', alice.publicKey]]) });
});
afterAll(async () => h.close());
afterEach(async () => h.terminateRunning());

/** Three files of 10, 20 and 30 bytes in `in-<name>/`, to be moved into `out-<name>/`. */
function threeFiles(name: string) {
  const from = join(h.root, `in-${name}`);
  const to = join(h.root, `out-${name}`);
  mkdirSync(from);
  mkdirSync(to);
  const names = ['a.mkv', 'b.mkv', 'c.mkv'];
  names.forEach((n, i) => writeFileSync(join(from, n), 'x'.repeat(10 * (i + 1))));
  const moves = names.map((n) => ({ from: `in-${name}/${n}`, to: `out-${name}/${n}` }));
  return { from, to, names, moves };
}

function script(moves: ReadonlyArray<{ from: string; to: string }>) {
  return {
    turns: [{ tool_calls: [{ name: 'fs_move_many', arguments: { moves } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'moved' } }] }],
  };
}

test('a 3-entry move parks under the built-in rules, shows the set to the reviewer, and moves every entry once approved', async () => {
  const { from, to, names, moves } = threeFiles('ok');
  const { jobId } = await h.start({ jobId: 'move-many-ok', script: script(moves) });
  const parked = await h.waitForPending(jobId);
  expect(parked.pending[0]).toMatchObject({ toolName: 'fs_move_many', ruleId: 'approve-bulk-moves' });
  expect(readdirSync(to)).toEqual([]);

  // What the reviewer sees: count, total size (10 + 20 + 30 bytes), the first entries.
  const show = await h.cli(['show', jobId]);
  expect(show.code).toBe(0);
  expect(show.stdout).toContain('target 3 moves: 3 entries, 60 bytes in total');
  for (const n of names) expect(show.stdout).toContain(`${join(from, n)} → ${join(to, n)}`);
  const metadata = await h.env.client.workflow.getHandle(jobId).query<{ currentDetails: string }>('__temporal_workflow_metadata');
  // The Markdown card escapes punctuation (`\-`); the Web UI renders it as written.
  const details = metadata.currentDetails.replace(/\\(.)/g, '$1');
  expect(details).toContain('3 entries, 60 bytes in total');
  expect(details).toContain(`${join(from, 'a.mkv')} → ${join(to, 'a.mkv')}`);

  expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice', signingKey: alice.privateKey })).toMatchObject({ accepted: true });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(readdirSync(from)).toEqual([]);
  expect(readdirSync(to).sort()).toEqual(names);
  names.forEach((n, i) => expect(readFileSync(join(to, n), 'utf8')).toBe('x'.repeat(10 * (i + 1))));
  expect(h.toolResults(jobId).get('call_0_0')).toBe('moved 3 of 3 entries');
  // The call's journal (its plain paths) went once the outcome was in the store.
  expect(readdirSync(join(h.dir, 'tools', 'journals'))).toEqual([]);
});

test('a source changed after approval refuses the whole set: nothing moves', async () => {
  const { from, to, names, moves } = threeFiles('changed');
  const { jobId } = await h.start({ jobId: 'move-many-changed', script: script(moves) });
  await h.waitForPending(jobId);
  writeFileSync(join(from, 'b.mkv'), 'y'.repeat(20));
  expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice', signingKey: alice.privateKey })).toMatchObject({ accepted: true });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(readdirSync(from).sort()).toEqual(names);
  expect(readdirSync(to)).toEqual([]);
  expect(h.toolResults(jobId).get('call_0_0')).toMatch(/the entries to move changed since they were approved: 3 moves: it was replaced \(/);
});

test('a set the tool would refuse says why on the card: an existing destination, a missing source', async () => {
  const { to, moves } = threeFiles('refused');
  writeFileSync(join(to, 'c.mkv'), 'already here');
  const broken = [...moves, { from: 'in-refused/missing.mkv', to: 'out-refused/missing.mkv' }];
  const { jobId } = await h.start({ jobId: 'move-many-refused', script: script(broken) });
  const parked = await h.waitForPending(jobId);
  expect(parked.pending[0]?.reason).toMatch(/the tool will refuse this call: entry 3: .*c\.mkv already exists .*; entry 4: .*missing\.mkv does not exist/);
  expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice', signingKey: alice.privateKey })).toMatchObject({ accepted: true });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(h.toolResults(jobId).get('call_0_0')).toMatch(/entry 3: .*already exists/);
  expect(existsSync(join(to, 'a.mkv'))).toBe(false);
});
