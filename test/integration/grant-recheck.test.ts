import { randomBytes } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createToolGateActivities } from '../../activities/tool-gate';
import { callFingerprint } from '../../core/approval/fingerprint';
import { approvedCheckDigest } from '../../core/approval/grants';
import { FailureTypes } from '../../core/temporal/failure-types';
import { createGrantSigner, createGrantVerifier, loadOrCreateGrantKeyPair } from '../../host/keys/grant-keys';
import { Roots } from '../../host/fs/roots';
import { JobHarness } from '../helpers/job-harness';

/**
 * A grant for an approved call says so, and `execute` runs such a call
 * only together with the approval to check again: holding a valid grant
 * is not enough to skip the check of what the reviewer saw.
 */
let h: JobHarness;

beforeAll(async () => {
  h = await JobHarness.create({
    rules: { version: 1, rules: [{ id: 'approve-deletes', version: 1, name: 'Deletes need approval', scope: { categories: ['delete'] }, action: 'request_approval' }] },
  });
});
afterAll(async () => h.close());

test('an approved call’s grant carries recheck, and its execute carries the approval to check', async () => {
  writeFileSync(join(h.root, 'old.tar'), 'old');
  const { jobId } = await h.start({
    jobId: 'recheck-grant',
    script: { turns: [{ tool_calls: [{ name: 'fs_delete', arguments: { path: 'old.tar' } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] }] },
  });
  await h.waitForPending(jobId);
  expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: true });
  expect((await h.result(jobId)).status).toBe('completed');
  const history = await h.env.client.workflow.getHandle(jobId).fetchHistory();
  const inputs = (history.events ?? []).flatMap((e) => {
    const a = e.activityTaskScheduledEventAttributes;
    if (a?.activityType?.name !== 'execute') return [];
    const data = a.input?.payloads?.[0]?.data;
    return data === undefined || data === null ? [] : [JSON.parse(Buffer.from(data).toString('utf8')) as { grant: { claims: { recheck?: string } }; approved?: unknown }];
  });
  expect(inputs).toHaveLength(1);
  expect(inputs[0]?.grant.claims.recheck).toEqual(approvedCheckDigest(inputs[0]?.approved));
  expect(inputs[0]?.approved).toBeDefined();
});

test('a valid grant that says recheck, sent to execute without the approval, is refused for good and runs nothing', async () => {
  const keys = loadOrCreateGrantKeyPair(h.keys.privateFile, h.keys.publicFile);
  const signer = createGrantSigner(keys.privateKey);
  const gate = createToolGateActivities({ roots: await Roots.create([h.root]), nonces: h.nonces, verifier: createGrantVerifier(keys.publicKey) });
  const env = new MockActivityEnvironment();
  const target = join(h.root, 'precious.tar');
  writeFileSync(target, 'keep');
  const args = { path: target, recursive: false };
  const call = (recheck: boolean) => {
    const nonce = randomBytes(16).toString('hex');
    const fingerprint = callFingerprint({ jobId: 'forger', scope: {}, toolName: 'fs_delete', normalizedArgs: args, ruleId: 'approve-deletes', ruleVersion: 1 });
    const grant = signer.sign({ v: 1, jobId: 'forger', callId: 'c1', fingerprint, nonce, expiresAt: Date.now() + 60_000, ...(recheck ? { recheck: approvedCheckDigest({ the: 'approval the reviewer gave' }) } : {}) });
    return { jobId: 'forger', callId: 'c1', scope: {}, toolName: 'fs_delete', args, ruleId: 'approve-deletes', ruleVersion: 1, grant };
  };
  await expect(env.run(gate.execute, call(true))).rejects.toMatchObject({ type: FailureTypes.GrantInvalid, nonRetryable: true, message: expect.stringMatching(/runs only with its approval checked again/) });
  // Bringing an approval check of one's own (what the target is now, approved by anyone) does not match the grant's.
  const forged = { allowedTools: ['fs_delete'], reviewer: 'mallory', reviewers: null, separateRequester: false, requester: 'bob', observed: [], originalTargets: [target] };
  await expect(env.run(gate.execute, { ...call(true), approved: forged })).rejects.toMatchObject({ type: FailureTypes.GrantInvalid, message: expect.stringMatching(/not the one this grant was issued with/) });
  expect(existsSync(target)).toBe(true);
});
