import { undoJobId } from '../../client/airlock-client/undoing';
import { generateKeyPairSync } from 'node:crypto';
import { existsSync, linkSync, mkdirSync, readFileSync, realpathSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { WithStartWorkflowOperation } from '@temporalio/client';
import { AGENT_JOB_WORKFLOW } from '../../core/job/job-input';
import { defaultRules } from '../../core/policy/default-rules';
import { TaskQueues } from '../../core/temporal/task-queues';
import { submitCallUpdate } from '../../workflows/messages';
import { JobHarness } from '../helpers/job-harness';
import { treeListing } from '../helpers/tree-listing';

/**
 * `airlock undo` end to end on a real Temporal server, real workers and the
 * real CLI process, under the built-in rules: a job's approved delete in a
 * root kept for undo is taken back by the reviewer who approved it in one
 * command (their signed decision on the undo's own request); anyone else's
 * undo waits for a reviewer; the undo is a job of its own with its history,
 * its audit events and its answer.
 */
let h: JobHarness;
const alice = generateKeyPairSync('ed25519');
const bob = generateKeyPairSync('ed25519');
let aliceKey: string;
let bobKey: string;

beforeAll(async () => {
  h = await JobHarness.create({ rules: defaultRules, undoKeepDays: 7, reviewerKeys: new Map([['alice', alice.publicKey], ['bob', bob.publicKey]]) });
  aliceKey = join(h.dir, 'alice.pem');
  bobKey = join(h.dir, 'bob.pem');
  writeFileSync(aliceKey, alice.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
  writeFileSync(bobKey, bob.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600 });
});
afterAll(async () => h.close());

/** A job that deletes each path (one call per turn), every delete approved by alice with her key; its id once it completed. */
async function deletedByJob(jobId: string, paths: Array<{ path: string; recursive?: boolean }>): Promise<string> {
  await h.start({
    jobId,
    script: {
      turns: [
        ...paths.map((p) => ({ tool_calls: [{ name: 'fs_delete', arguments: { path: p.path, recursive: p.recursive ?? false } }] })),
        { tool_calls: [{ name: 'complete', arguments: { summary: 'deleted' } }] },
      ],
    },
  });
  for (let i = 0; i < paths.length; i++) {
    const parked = await h.waitForPending(jobId);
    expect(parked.pending[0]?.undo).toEqual({ reversible: true, keepDays: 7 });
    expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice', signingKey: alice.privateKey })).toMatchObject({ accepted: true });
  }
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  return jobId;
}

test('the reviewer who approved a delete undoes it in one command: the folder is back whole, and the undo is a job of its own with its audit', async () => {
  const folder = join(h.root, 'photos');
  for (let d = 0; d < 5; d++) {
    mkdirSync(join(folder, `d${d}`), { recursive: true });
    for (let f = 0; f < 20; f++) writeFileSync(join(folder, `d${d}`, `f${f}.jpg`), `photo ${d}/${f}`);
  }
  const before = treeListing(folder);
  const jobId = await deletedByJob('undo-cli-photos', [{ path: 'photos', recursive: true }]);
  expect(existsSync(folder)).toBe(false);
  // `show` says how to take it back.
  expect((await h.cli(['show', jobId])).stdout).toContain(`approved fs_delete (request `);
  expect((await h.cli(['show', jobId])).stdout).toContain(`by alice — executed; reversible for 7 days from when it ran: npx airlock undo ${jobId} --call call_0_0`);

  const undone = await h.cli(['undo', jobId, '--reviewer', 'alice', '--sign', aliceKey, '--json']);
  expect(undone.stderr).toBe('');
  expect(undone.code).toBe(0);
  const report = JSON.parse(undone.stdout) as Record<string, unknown>;
  expect(report).toMatchObject({ jobId, callId: 'call_0_0', path: `${realpathSync(h.root)}/photos`, undoJob: undoJobId(jobId, 'call_0_0'), status: 'restored', detail: `restored ${realpathSync(h.root)}/photos` });
  expect(treeListing(folder)).toEqual(before);

  // Its own job: the request alice decided with her key, and the call that ran.
  const undoJob = undoJobId(jobId, 'call_0_0');
  expect(await h.result(undoJob)).toMatchObject({ status: 'completed', facts: { gated: [{ toolName: 'fs_undo', outcome: 'executed', reviewer: 'alice' }] } });
  expect(h.audit(undoJob, 'approval_requested')).toHaveLength(1);
  expect(h.audit(undoJob, 'tool_executed').map((e) => e.data.toolName)).toEqual(['fs_undo']);

  // Again: nothing left to put back, said in one line.
  const again = await h.cli(['undo', jobId, '--reviewer', 'alice', '--sign', aliceKey]);
  expect(again.code).toBe(1);
  expect(again.stderr).toMatch(/^not restored: .*(exists again|already undone)/);
  expect(treeListing(folder)).toEqual(before);
});

test('an approved overwrite and an approved move that replaced a file, each undone by its approver in one command: both files as they were', async () => {
  writeFileSync(join(h.root, 'report.txt'), 'the report as it was');
  writeFileSync(join(h.root, 'next.conf'), 'next settings');
  writeFileSync(join(h.root, 'live.conf'), 'live settings');
  const jobId = 'undo-cli-write-move';
  await h.start({
    jobId,
    script: {
      turns: [
        { tool_calls: [{ name: 'fs_write', arguments: { path: 'report.txt', content: 'rewritten', mode: 'overwrite' } }] },
        { tool_calls: [{ name: 'fs_move', arguments: { from: 'next.conf', to: 'live.conf', overwrite: true } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] },
      ],
    },
  });
  for (let i = 0; i < 2; i++) {
    const parked = await h.waitForPending(jobId);
    expect(parked.pending[0]?.undo).toEqual({ reversible: true, keepDays: 7 });
    expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice', signingKey: alice.privateKey })).toMatchObject({ accepted: true });
  }
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(readFileSync(join(h.root, 'live.conf'), 'utf8')).toBe('next settings');

  const listed = await h.cli(['undo', '--list', jobId], { AIRLOCK_DATA_DIR: h.dir });
  expect(listed.stdout).toContain(`${jobId} call_0_0: fs_write of a file's content before an overwrite, 20 bytes in `);
  expect(listed.stdout).toContain(`${jobId} call_1_0: fs_move of a file, 13 bytes moved elsewhere, and the file it replaced (13 bytes) in `);
  const real = realpathSync(h.root);
  const write = await h.cli(['undo', jobId, '--call', 'call_0_0', '--reviewer', 'alice', '--sign', aliceKey, '--json']);
  expect(write.stderr).toBe('');
  expect(JSON.parse(write.stdout)).toMatchObject({ status: 'restored', detail: `put ${real}/report.txt back as it was before the write` });
  expect(readFileSync(join(h.root, 'report.txt'), 'utf8')).toBe('the report as it was');

  const move = await h.cli(['undo', jobId, '--call', 'call_1_0', '--reviewer', 'alice', '--sign', aliceKey, '--json']);
  expect(move.stderr).toBe('');
  expect(JSON.parse(move.stdout)).toMatchObject({ status: 'restored', detail: `moved ${real}/live.conf back to ${real}/next.conf and put back the file it replaced` });
  expect(readFileSync(join(h.root, 'next.conf'), 'utf8')).toBe('next settings');
  expect(readFileSync(join(h.root, 'live.conf'), 'utf8')).toBe('live settings');
  // The undo job's one call names where the entry went.
  expect(await h.result(undoJobId(jobId, 'call_1_0'))).toMatchObject({ status: 'completed', facts: { gated: [{ toolName: 'fs_undo', outcome: 'executed', reviewer: 'alice' }] } });
});

test('an approved bulk move undone by its approver in one command: every entry back where it was, the signed undo naming the whole list', async () => {
  mkdirSync(join(h.root, 'cli-in'));
  mkdirSync(join(h.root, 'cli-out'));
  const moves = Array.from({ length: 30 }, (_, i) => {
    writeFileSync(join(h.root, 'cli-in', `photo-${i}.jpg`), `photo ${i}`);
    return { from: `cli-in/photo-${i}.jpg`, to: `cli-out/photo-${i}.jpg` };
  });
  const jobId = 'undo-cli-bulk';
  await h.start({ jobId, script: { turns: [{ tool_calls: [{ name: 'fs_move_many', arguments: { moves } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] }] } });
  const parked = await h.waitForPending(jobId);
  expect(parked.pending[0]?.undo).toEqual({ reversible: true, keepDays: 7 });
  expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice', signingKey: alice.privateKey })).toMatchObject({ accepted: true });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(readFileSync(join(h.root, 'cli-out', 'photo-7.jpg'), 'utf8')).toBe('photo 7');

  const listed = await h.cli(['undo', '--list', jobId], { AIRLOCK_DATA_DIR: h.dir });
  expect(listed.stdout).toContain(`${jobId} call_0_0: fs_move_many of 30 of 30 entries moved elsewhere (`);
  const json = JSON.parse((await h.cli(['undo', '--list', jobId, '--json'], { AIRLOCK_DATA_DIR: h.dir })).stdout) as Array<Record<string, unknown>>;
  expect(json).toEqual([expect.objectContaining({ toolName: 'fs_move_many', held: expect.objectContaining({ type: 'set', files: 30 }), change: { kind: 'moved_many', count: 30, moved: 30 } })]);
  const undone = await h.cli(['undo', jobId, '--reviewer', 'alice', '--sign', aliceKey, '--json']);
  expect(undone.stderr).toBe('');
  expect(JSON.parse(undone.stdout)).toMatchObject({ status: 'restored', detail: `moved 30 entries back to where call call_0_0 of job ${jobId} moved them from` });
  expect(readFileSync(join(h.root, 'cli-in', 'photo-7.jpg'), 'utf8')).toBe('photo 7');
  expect(existsSync(join(h.root, 'cli-out', 'photo-7.jpg'))).toBe(false);
  expect(await h.result(undoJobId(jobId, 'call_0_0'))).toMatchObject({ status: 'completed', facts: { gated: [{ toolName: 'fs_undo', outcome: 'executed', reviewer: 'alice' }] } });
});

test('the path of an approved overwrite swapped for a hard link to a file outside the roots with the same bytes: the approver\'s undo signs nothing (the card says the file has two names and will be refused); approved anyway, it restores nothing, and the file outside keeps its bytes', async () => {
  writeFileSync(join(h.root, 'linked.txt'), 'the old content');
  const jobId = 'undo-cli-swapped';
  await h.start({ jobId, script: { turns: [{ tool_calls: [{ name: 'fs_write', arguments: { path: 'linked.txt', content: 'written', mode: 'overwrite' } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] }] } });
  await h.waitForPending(jobId);
  expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice', signingKey: alice.privateKey })).toMatchObject({ accepted: true });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  const elsewhere = join(h.dir, 'outside-the-roots.txt');
  writeFileSync(elsewhere, 'written');
  linkSync(elsewhere, join(h.root, 'linked.swap'));
  renameSync(join(h.root, 'linked.swap'), join(h.root, 'linked.txt'));

  const undone = await h.cli(['undo', jobId, '--reviewer', 'alice', '--sign', aliceKey, '--json']);
  expect(undone.code).toBe(0);
  expect(JSON.parse(undone.stdout)).toMatchObject({ status: 'waiting', detail: expect.stringContaining('linked.txt has 2 names (hard links), possibly outside the allowed folders') });
  const undoJob = undoJobId(jobId, 'call_0_0');
  expect((await h.airlock.state(undoJob)).pending[0]?.reason).toMatch(/the tool will refuse this call: .*is another file than the one call call_0_0 of job undo-cli-swapped wrote \(replaced since\); nothing was put back/);
  expect(readFileSync(elsewhere, 'utf8')).toBe('written');
  expect((await h.cli(['approve', undoJob, '--reviewer', 'bob', '--sign', bobKey])).code).toBe(0);
  expect(await h.result(undoJob)).toMatchObject({ status: 'completed', facts: { gated: [{ toolName: 'fs_undo', outcome: 'failed' }] } });
  expect(readFileSync(elsewhere, 'utf8')).toBe('written');
});

test('an approved overwrite of a file with two names: the approver\'s undo signs nothing and waits, its card saying the file has two names; a reviewer approving that card puts it back under both', async () => {
  writeFileSync(join(h.root, 'two-names.txt'), 'as it was');
  linkSync(join(h.root, 'two-names.txt'), join(h.root, 'second-name.txt'));
  const jobId = 'undo-cli-two-names';
  await h.start({ jobId, script: { turns: [{ tool_calls: [{ name: 'fs_write', arguments: { path: 'two-names.txt', content: 'changed', mode: 'overwrite' } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] }] } });
  await h.waitForPending(jobId);
  expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice', signingKey: alice.privateKey })).toMatchObject({ accepted: true });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });

  const asked = await h.cli(['undo', jobId, '--reviewer', 'alice', '--sign', aliceKey, '--json']);
  expect(asked.code).toBe(0);
  expect(JSON.parse(asked.stdout)).toMatchObject({ status: 'waiting', detail: expect.stringContaining(`the undo waits for a reviewer to read its card: ${realpathSync(h.root)}/two-names.txt has 2 names (hard links), possibly outside the allowed folders`) });
  const undoJob = undoJobId(jobId, 'call_0_0');
  expect(h.audit(undoJob, 'approval_decided')).toEqual([]);
  expect(readFileSync(join(h.root, 'second-name.txt'), 'utf8')).toBe('changed');
  const card = await h.cli(['show', undoJob]);
  expect(card.stdout).toContain('2 names (hard links: changing it changes it under every name)');

  expect((await h.cli(['approve', undoJob, '--reviewer', 'bob', '--sign', bobKey])).code).toBe(0);
  expect(await h.result(undoJob)).toMatchObject({ status: 'completed', facts: { gated: [{ outcome: 'executed', reviewer: 'bob' }] } });
  expect(readFileSync(join(h.root, 'second-name.txt'), 'utf8')).toBe('as it was');
});

test("someone else's undo waits for a reviewer; a reviewer's approval of it restores; a job with several deletes asks which", async () => {
  writeFileSync(join(h.root, 'a.txt'), 'alpha');
  writeFileSync(join(h.root, 'b.txt'), 'beta');
  const jobId = await deletedByJob('undo-cli-two', [{ path: 'a.txt' }, { path: 'b.txt' }]);

  // What can be undone, from the tools worker's store: both deletes, by job and call, what each keeps and until when.
  const listed = await h.cli(['undo', '--list', jobId, '--json'], { AIRLOCK_DATA_DIR: h.dir });
  expect(listed.code).toBe(0);
  const held = JSON.parse(listed.stdout) as Array<Record<string, unknown>>;
  expect(held.map((r) => r.callId).sort()).toEqual(['call_0_0', 'call_1_0']);
  expect(held[0]).toMatchObject({ jobId, toolName: 'fs_delete', root: realpathSync(h.root), held: { type: 'file', bytes: 4 } });
  expect(JSON.stringify(held)).not.toContain('a.txt');
  const text = await h.cli(['undo', '--list'], { AIRLOCK_DATA_DIR: h.dir });
  expect(text.stdout).toContain(`${jobId} call_1_0: fs_delete of a file, 4 bytes in ${realpathSync(h.root)}; undo until `);
  expect(text.stdout).toContain(`(npx airlock undo ${jobId} --call call_1_0)`);
  // Where no tools worker keeps records: said so, in one line.
  const elsewhere = await h.cli(['undo', '--list'], { AIRLOCK_DATA_DIR: join(h.dir, 'nowhere') });
  expect(elsewhere.code).not.toBe(0);
  expect(elsewhere.stderr).toContain('no undo records here');

  const which = await h.cli(['undo', jobId, '--reviewer', 'bob', '--sign', bobKey]);
  expect(which.code).toBe(2);
  expect(which.stderr).toContain('call_0_0');
  expect(which.stderr).toContain('call_1_0');
  expect(which.stderr).toContain('name one with --call ID');

  const asked = await h.cli(['undo', jobId, '--call', 'call_1_0', '--reviewer', 'bob', '--sign', bobKey]);
  expect(asked.code).toBe(0);
  const undoJob = undoJobId(jobId, 'call_1_0');
  expect(asked.stdout).toContain(`waiting: request`);
  expect(asked.stdout).toContain(`alice approved that change, not bob; the undo waits for a reviewer`);
  expect(existsSync(join(h.root, 'b.txt'))).toBe(false);
  // Asked again while it waits: the same request, not a second one.
  const twice = await h.cli(['undo', jobId, '--call', 'call_1_0', '--reviewer', 'bob', '--sign', bobKey, '--json']);
  expect(JSON.parse(twice.stdout)).toMatchObject({ status: 'waiting', undoJob });
  expect((await h.airlock.state(undoJob)).pending).toHaveLength(1);

  const approved = await h.cli(['approve', undoJob, '--reviewer', 'alice', '--sign', aliceKey]);
  expect(approved.code).toBe(0);
  expect(await h.result(undoJob)).toMatchObject({ status: 'completed', facts: { gated: [{ outcome: 'executed', reviewer: 'alice' }] } });
  expect(readFileSync(join(h.root, 'b.txt'), 'utf8')).toBe('beta');
  expect(existsSync(join(h.root, 'a.txt'))).toBe(false);
});

test('a rule that keeps requesters from deciding their own requests makes even the approving reviewer\'s undo wait for someone else', async () => {
  writeFileSync(join(h.root, 'kept.txt'), 'kept');
  const jobId = await deletedByJob('undo-cli-separate', [{ path: 'kept.txt' }]);
  h.setRules({
    ...defaultRules,
    rules: [...(defaultRules.rules ?? []), { id: 'undo-by-another', version: 1, name: 'Undos need another reviewer', scope: { tools: ['fs_undo'] }, action: 'request_approval', approval: { separateRequester: true } }],
  });
  try {
    const asked = await h.cli(['undo', jobId, '--reviewer', 'alice', '--sign', aliceKey, '--json']);
    expect(asked.code).toBe(0);
    expect(JSON.parse(asked.stdout)).toMatchObject({ status: 'waiting', detail: expect.stringContaining('the undo waits for another reviewer (the requester alice may not decide their own request)') });
    expect(existsSync(join(h.root, 'kept.txt'))).toBe(false);
    expect(await h.airlock.decide(undoJobId(jobId, 'call_0_0'), { decision: 'approve', reviewer: 'bob', signingKey: bob.privateKey })).toMatchObject({ accepted: true });
    expect(await h.result(undoJobId(jobId, 'call_0_0'))).toMatchObject({ status: 'completed', facts: { gated: [{ outcome: 'executed', reviewer: 'bob' }] } });
    expect(readFileSync(join(h.root, 'kept.txt'), 'utf8')).toBe('kept');
  } finally {
    h.setRules(defaultRules);
  }
});

test("a job another Temporal client started first under the undo's id, parked on something else: airlock undo signs nothing of it and says so", async () => {
  writeFileSync(join(h.root, 'c.txt'), 'gamma');
  writeFileSync(join(h.root, 'precious.txt'), 'precious');
  const jobId = await deletedByJob('undo-cli-hijack', [{ path: 'c.txt' }]);
  // Mallory can start workflows: she starts the undo's job herself, with a write of her own waiting for a reviewer.
  const squatted = await h.env.client.workflow.executeUpdateWithStart(submitCallUpdate, {
    args: [{ callKey: 'mallory-1', toolName: 'fs_write', args: { path: join(h.root, 'precious.txt'), content: 'pwned', mode: 'overwrite' } }],
    updateId: 'mallory-1',
    startWorkflowOperation: new WithStartWorkflowOperation(AGENT_JOB_WORKFLOW, {
      workflowId: undoJobId(jobId, 'call_0_0'),
      taskQueue: TaskQueues.agent,
      workflowIdConflictPolicy: 'USE_EXISTING',
      args: [{ schemaVersion: 1, goal: 'undo', requester: 'mallory', driver: 'client', tools: ['fs_write'] }],
    }),
  });
  expect(squatted).toMatchObject({ status: 'parked', toolName: 'fs_write' });
  const undone = await h.cli(['undo', jobId, '--reviewer', 'alice', '--sign', aliceKey]);
  expect(undone.code).not.toBe(0);
  expect(undone.stderr).toContain('was started with other settings; airlock undo did not start it');
  expect(readFileSync(join(h.root, 'precious.txt'), 'utf8')).toBe('precious');
  expect(existsSync(join(h.root, 'c.txt'))).toBe(false);
  expect((await h.airlock.state(undoJobId(jobId, 'call_0_0'))).pending).toHaveLength(1);
  await h.env.client.workflow.getHandle(undoJobId(jobId, 'call_0_0')).terminate('test');

  // Started first with an undo of something else (another call's path): alice's key signs nothing, and the undo waits.
  writeFileSync(join(h.root, 'd.txt'), 'delta');
  const other = await deletedByJob('undo-cli-hijack-2', [{ path: 'd.txt' }]);
  await h.env.client.workflow.executeUpdateWithStart(submitCallUpdate, {
    args: [{ callKey: 'mallory-2', toolName: 'fs_undo', args: { job: jobId, call: 'call_0_0', path: join(h.root, 'c.txt') } }],
    updateId: 'mallory-2',
    startWorkflowOperation: new WithStartWorkflowOperation(AGENT_JOB_WORKFLOW, {
      workflowId: undoJobId(other, 'call_0_0'),
      taskQueue: TaskQueues.agent,
      workflowIdConflictPolicy: 'USE_EXISTING',
      args: [{ schemaVersion: 1, goal: 'undo', requester: 'mallory', driver: 'client', tools: ['fs_undo'], takesCalls: 1 }],
    }),
  });
  const signed = await h.cli(['undo', other, '--reviewer', 'alice', '--sign', aliceKey, '--json']);
  expect(JSON.parse(signed.stdout)).toMatchObject({ status: 'waiting', detail: expect.stringContaining('nothing was signed') });
  expect(h.audit(undoJobId(other, 'call_0_0'), 'approval_decided')).toEqual([]);
  expect(existsSync(join(h.root, 'c.txt'))).toBe(false);
  expect(existsSync(join(h.root, 'd.txt'))).toBe(false);
});

test('a job that made no change kept for undo, or a job that does not exist: one clear line, non-zero', async () => {
  const none = await h.cli(['undo', 'no-such-job', '--reviewer', 'alice']);
  expect(none.code).not.toBe(0);
  expect(none.stderr.trim().split('\n')).toHaveLength(1);
  expect(none.stderr).toContain('no-such-job');
});
