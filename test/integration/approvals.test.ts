import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { approvalDecisionSignal } from '../../workflows/messages';
import { JobHarness } from '../helpers/job-harness';

let h: JobHarness;

beforeAll(async () => {
  h = await JobHarness.create({
    rules: {
      version: 1,
      rules: [
        {
          id: 'approve-deletes',
          version: 3,
          name: 'Deleting needs approval',
          scope: { categories: ['delete'] },
          action: 'request_approval',
          instruction: 'Check for a backup first.',
          approval: { editable: ['recursive'] },
        },
        {
          id: 'approve-chmod',
          version: 1,
          name: 'Permission changes need approval',
          scope: { tools: ['fs_chmod'] },
          action: 'request_approval',
          approval: { editable: ['mode'] },
        },
      ],
    },
  });
});
afterAll(async () => h.close());
afterEach(async () => h.terminateRunning());

const deleteThenComplete = (path: string) => ({
  turns: [
    { tool_calls: [{ name: 'fs_delete', arguments: { path } }] },
    { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] },
  ],
});

test('a gated fs_delete parks, shows in `airlock pending --json`, and runs exactly once when approved from the CLI', async () => {
  const file = join(h.root, 'old.tar');
  writeFileSync(file, 'old backup');
  const { jobId } = await h.start({ script: deleteThenComplete('old.tar') });
  const parked = await h.waitForPending(jobId);
  const request = parked.pending[0]!;
  expect(request).toMatchObject({ toolName: 'fs_delete', ruleId: 'approve-deletes', ruleVersion: 3, editable: ['recursive'] });
  expect(request.reason).toContain('Check for a backup first.');
  expect(request.nonce).toMatch(/^[0-9a-f]{32}$/);
  expect(request.observed[0]).toMatchObject({ path: file, exists: true, type: 'file', size: 10 });
  expect(existsSync(file)).toBe(true);

  // Visibility is eventually consistent: poll the real CLI until the job is listed.
  let listed: Array<{ jobId: string; pending: Array<{ requestId: string; fingerprint: string }> }> = [];
  for (let i = 0; i < 50 && !listed.some((j) => j.jobId === jobId); i++) {
    const out = await h.cli(['pending', '--json']);
    expect(out.code).toBe(0);
    listed = JSON.parse(out.stdout) as typeof listed;
    if (!listed.some((j) => j.jobId === jobId)) await new Promise((r) => setTimeout(r, 200));
  }
  const entry = listed.find((j) => j.jobId === jobId)!;
  expect(entry.pending[0]).toMatchObject({ requestId: request.requestId, fingerprint: request.fingerprint });

  const approved = await h.cli(['approve', jobId, '--reviewer', 'alice', '--reason', 'backup exists']);
  expect(approved).toMatchObject({ code: 0 });
  expect(approved.stdout).toMatch(/^accepted: request .* is approved/);

  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(existsSync(file)).toBe(false);
  expect(h.toolResults(jobId).get('call_0_0')).toBe(`deleted ${file}`);
  expect(h.audit(jobId, 'tool_executed')).toHaveLength(1);
  expect(h.audit(jobId, 'approval_decided')).toHaveLength(1);
  expect(h.audit(jobId, 'approval_decided')[0]!.data).toMatchObject({ reviewer: 'alice', decision: 'approve' });
});

test('a wrong nonce, a wrong fingerprint or an unknown request id is rejected and audited; nothing changes', async () => {
  const file = join(h.root, 'keep.txt');
  writeFileSync(file, 'keep me');
  const { jobId } = await h.start({ script: deleteThenComplete('keep.txt') });
  const request = (await h.waitForPending(jobId)).pending[0]!;
  const base = { requestId: request.requestId, fingerprint: request.fingerprint, nonce: request.nonce, decision: 'approve' as const, reviewer: 'mallory' };
  const attempts = [
    { ...base, nonce: '0'.repeat(32) },
    { ...base, fingerprint: 'f'.repeat(64) },
    { ...base, requestId: 'no-such-request' },
  ];
  const outcomes = [];
  for (const payload of attempts) outcomes.push(await h.airlock.sendDecision(jobId, payload));
  expect(outcomes.map((o) => (o.accepted ? 'accepted' : o.code))).toEqual(['nonce_mismatch', 'fingerprint_mismatch', 'unknown_request']);

  const after = await h.waitFor(jobId, (s) => s.counters.rejectedDecisions === 3, 'three audited rejections');
  expect(after.status).toBe('awaiting_approval');
  expect(after.pending).toHaveLength(1);
  expect(after.pending[0]).toMatchObject({ requestId: request.requestId, nonce: request.nonce, fingerprint: request.fingerprint });
  expect(existsSync(file)).toBe(true);
  await h.waitFor(jobId, () => h.audit(jobId, 'approval_fingerprint_mismatch').length === 3, 'mismatch audit events');
  expect(h.audit(jobId, 'approval_fingerprint_mismatch').map((e) => e.data.code)).toEqual([
    'nonce_mismatch',
    'fingerprint_mismatch',
    'unknown_request',
  ]);
  expect(h.audit(jobId, 'tool_executed')).toHaveLength(0);
});

test('the same approval sent twice (signal, then update) executes once', async () => {
  const file = join(h.root, 'twice.txt');
  writeFileSync(file, 'x');
  const { jobId, handle } = await h.start({ script: deleteThenComplete('twice.txt') });
  const request = (await h.waitForPending(jobId)).pending[0]!;
  const payload = { requestId: request.requestId, fingerprint: request.fingerprint, nonce: request.nonce, decision: 'approve' as const, reviewer: 'alice' };
  await handle.signal(approvalDecisionSignal, payload);
  const second = await h.airlock.sendDecision(jobId, payload);
  expect(second).toMatchObject({ accepted: false, code: 'already_decided' });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(existsSync(file)).toBe(false);
  expect(h.audit(jobId, 'tool_executed')).toHaveLength(1);
  expect(h.audit(jobId, 'approval_decided')).toHaveLength(1);
  expect(h.audit(jobId, 'approval_rejected').map((e) => e.data.code)).toEqual(['already_decided']);
});

test('an approval of an earlier batch sent again is already decided, not a mismatch', async () => {
  writeFileSync(join(h.root, 'first.txt'), '1');
  writeFileSync(join(h.root, 'second.txt'), '2');
  const { jobId } = await h.start({
    script: {
      turns: [
        { tool_calls: [{ name: 'fs_delete', arguments: { path: 'first.txt' } }] },
        { tool_calls: [{ name: 'fs_delete', arguments: { path: 'second.txt' } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] },
      ],
    },
  });
  const first = (await h.waitForPending(jobId)).pending[0]!;
  const payload = { requestId: first.requestId, fingerprint: first.fingerprint, nonce: first.nonce, decision: 'approve' as const, reviewer: 'alice' };
  expect(await h.airlock.sendDecision(jobId, payload)).toMatchObject({ accepted: true });
  await h.waitFor(jobId, (s) => s.pending.length === 1 && s.pending[0]?.requestId !== first.requestId, 'the second batch parked');
  // The first request's batch is closed: the job still knows it, and says so.
  expect(await h.airlock.sendDecision(jobId, payload)).toMatchObject({ accepted: false, code: 'already_decided' });
  await h.waitFor(jobId, () => h.audit(jobId, 'approval_rejected').length === 1, 'the reported rejection audited');
  expect(h.audit(jobId, 'approval_rejected').map((e) => e.data.code)).toEqual(['already_decided']);
  expect(h.audit(jobId, 'approval_fingerprint_mismatch')).toHaveLength(0);
  expect(h.audit(jobId, 'tool_executed')).toHaveLength(1);
  expect(existsSync(join(h.root, 'second.txt'))).toBe(true);
});

test('a denial keeps the file, tells the model why, and the identical call is then auto-denied without a new request', async () => {
  const file = join(h.root, 'precious.txt');
  writeFileSync(file, 'precious');
  const { jobId } = await h.start({
    script: {
      turns: [
        { tool_calls: [{ name: 'fs_delete', arguments: { path: 'precious.txt' } }] },
        { tool_calls: [{ name: 'fs_delete', arguments: { path: 'precious.txt', recursive: false } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'left it' } }] },
      ],
    },
  });
  await h.waitForPending(jobId);
  const denied = await h.cli(['deny', jobId, '--reviewer', 'bob', '--reason', 'this is the only copy']);
  expect(denied.code).toBe(0);
  expect(await h.result(jobId)).toMatchObject({ status: 'completed', summary: 'left it' });
  expect(existsSync(file)).toBe(true);
  const results = h.toolResults(jobId);
  expect(results.get('call_0_0')).toBe('Not executed: bob denied this call: this is the only copy. Do not propose it again unchanged.');
  // Same call (defaults make `{path}` and `{path, recursive:false}` identical): auto-denied.
  expect(results.get('call_1_0')).toMatch(/denied earlier in this job and will not be requested again/);
  expect(h.audit(jobId, 'approval_requested')).toHaveLength(1);
  const state = await h.state(jobId);
  expect(state.counters).toMatchObject({ approvalRequests: 1, deniedFingerprints: 1, toolCallsExecuted: 0 });
});

test('an edit inside the editable fields binds a new fingerprint and runs the edited call; an edit outside is rejected', async () => {
  const file = join(h.root, 'script.sh');
  writeFileSync(file, '#!/bin/sh\n');
  const { jobId } = await h.start({
    script: {
      turns: [
        { tool_calls: [{ name: 'fs_chmod', arguments: { path: 'script.sh', mode: '777' } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'mode set' } }] },
      ],
    },
  });
  const request = (await h.waitForPending(jobId)).pending[0]!;

  const outside = await h.cli(['approve', jobId, '--set', 'path=/etc/passwd']);
  expect(outside.code).toBe(1);
  // Checked before anything is sent: the request's editable fields are on its card.
  expect(outside.stdout).toBe('');
  expect(outside.stderr).toMatch(/rejected \(edit_not_allowed\): field\(s\) path are not editable \(editable: mode\)/);
  expect((await h.state(jobId)).pending).toHaveLength(1);

  const inside = await h.cli(['approve', jobId, '--set', 'mode=640', '--json']);
  expect(inside.code).toBe(0);
  const outcome = JSON.parse(inside.stdout) as { accepted: boolean; editedFingerprint: string };
  expect(outcome.accepted).toBe(true);
  expect(outcome.editedFingerprint).toMatch(/^[0-9a-f]{64}$/);
  expect(outcome.editedFingerprint).not.toBe(request.fingerprint);

  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect((statSync(file).mode & 0o777).toString(8)).toBe('640');
  expect(h.toolResults(jobId).get('call_0_0')).toMatch(/changed mode of .* to 640\n\(The reviewer edited mode before approving\.\)/);
  const [decided] = h.audit(jobId, 'approval_decided');
  expect(decided!.data).toMatchObject({ originalFingerprint: request.fingerprint, editedFingerprint: outcome.editedFingerprint });
  const executed = h.audit(jobId, 'tool_executed');
  expect(executed).toHaveLength(1);
  expect(executed[0]!.data.fingerprint).toBe(outcome.editedFingerprint);
});
