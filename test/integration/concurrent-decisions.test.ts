import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto';
import { writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { type DecisionPayload } from '../../core/approval/approvals';
import { decisionSigningText } from '../../core/approval/decision-check';
import type { PendingRequestView } from '../../core/job/job-view';
import { approvalDecisionSignal, decideUpdate } from '../../workflows/messages';
import { JobHarness } from '../helpers/job-harness';
import { expectRunReplays } from '../helpers/replays';

/**
 * Many reviewers deciding one parked request at the same moment, through
 * a plain Temporal client: signals and updates, validly and badly signed,
 * approvals and denials. Exactly one decision counts; the job completes;
 * and its history replays, also when the worker's cache is empty (every
 * workflow task then replays the history so far, as after a restart).
 */
const keys = { alice: generateKeyPairSync('ed25519'), bob: generateKeyPairSync('ed25519'), mallory: generateKeyPairSync('ed25519') };
let h: JobHarness;

beforeAll(async () => {
  h = await JobHarness.create({
    // No cache: every workflow task of every job is a replay of its history so far.
    workflowCache: 0,
    reviewerKeys: new Map([
      ['alice', keys.alice.publicKey],
      ['bob', keys.bob.publicKey],
    ]),
    rules: {
      version: 1,
      rules: [
        { id: 'signed-deletes', version: 1, name: 'Deletes need a signed approval', scope: { categories: ['delete'] }, action: 'request_approval', approval: { signatureRequired: true } },
      ],
    },
  });
}, 120_000);
afterAll(async () => {
  await h?.close();
});

function signed(jobId: string, request: PendingRequestView, decision: 'approve' | 'deny', reviewer: 'alice' | 'bob', key: KeyObject): DecisionPayload {
  const unsigned: DecisionPayload = {
    requestId: request.requestId,
    fingerprint: request.fingerprint,
    nonce: request.nonce,
    decision,
    reviewer,
    ...(decision === 'deny' ? { reason: `${reviewer} says no` } : {}),
  };
  return { ...unsigned, signature: sign(null, Buffer.from(decisionSigningText(jobId, unsigned)), key).toString('base64') };
}

async function replays(jobId: string): Promise<void> {
  await expectRunReplays(await h.env.client.workflow.getHandle(jobId).fetchHistory(), jobId);
}

test.each([2, 10, 50])('%i decisions at once: one counts, the job completes and replays', async (n) => {
  const jobId = `concurrent-${n}`;
  writeFileSync(join(h.root, `${jobId}.tar`), 'old');
  await h.start({
    jobId,
    script: {
      turns: [{ tool_calls: [{ name: 'fs_delete', arguments: { path: `${jobId}.tar` } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] }],
    },
  });
  const [request] = (await h.waitForPending(jobId)).pending;
  if (request === undefined) throw new Error('no pending request');
  const handle = h.env.client.workflow.getHandle(jobId);
  // Mixed: updates and signals; alice and bob approving or denying, each validly signed; mallory's key under bob's name.
  const sends = Array.from({ length: n }, async (_, i) => {
    const reviewer = i % 2 === 0 ? 'alice' : 'bob';
    const decision = i % 3 === 2 ? 'deny' : 'approve';
    const payload = i % 5 === 4 ? signed(jobId, request, decision, 'bob', keys.mallory.privateKey) : signed(jobId, request, decision, reviewer, keys[reviewer].privateKey);
    if (i % 4 === 1) {
      await handle.signal(approvalDecisionSignal, payload);
      return 'signal';
    }
    return handle.executeUpdate(decideUpdate, { args: [payload] }).then(
      (r) => r.status,
      () => 'rejected',
    );
  });
  const answers = await Promise.all(sends);
  const result = await h.result(jobId);
  expect(result.status).toBe('completed');
  const decided = h.audit(jobId, 'approval_decided');
  expect(decided).toHaveLength(1);
  // The one decision that counted is what happened to the file.
  expect(existsSync(join(h.root, `${jobId}.tar`))).toBe(decided[0]?.data.decision === 'deny');
  // At most one update was answered with a decision; the rest were rejected.
  expect(answers.filter((a) => a === 'approved' || a === 'denied').length).toBeLessThanOrEqual(1);
  await replays(jobId);
  // The state query of the finished job answers (it replays the whole history).
  expect((await h.state(jobId)).status).toBe('completed');
}, 120_000);

test('decisions for two requests of one batch at once, signed, unsigned and forged: each request decided once, the job completes and replays', async () => {
  const jobId = 'concurrent-two-requests';
  for (const f of ['a.tar', 'b.tar']) writeFileSync(join(h.root, f), 'old');
  await h.start({
    jobId,
    script: {
      turns: [
        { tool_calls: [{ name: 'fs_delete', arguments: { path: 'a.tar' } }, { name: 'fs_delete', arguments: { path: 'b.tar' } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] },
      ],
    },
  });
  const pending = (await h.waitForPending(jobId, 2)).pending;
  const handle = h.env.client.workflow.getHandle(jobId);
  const sends = Array.from({ length: 20 }, async (_, i) => {
    const request = pending[i % 2];
    if (request === undefined) throw new Error('no request');
    const reviewer = i % 3 === 0 ? 'alice' : 'bob';
    let payload = signed(jobId, request, 'approve', reviewer, keys[reviewer].privateKey);
    if (i % 7 === 3) payload = { ...payload, signature: undefined };
    if (i % 7 === 5) payload = signed(jobId, request, 'approve', reviewer, keys.mallory.privateKey);
    if (i % 2 === 1) return handle.signal(approvalDecisionSignal, payload);
    return handle.executeUpdate(decideUpdate, { args: [payload] }).then(
      () => undefined,
      () => undefined,
    );
  });
  await Promise.all(sends);
  expect((await h.result(jobId)).status).toBe('completed');
  const decided = h.audit(jobId, 'approval_decided');
  expect(decided.map((e) => e.data.requestId).sort()).toEqual(pending.map((r) => r.requestId).sort());
  expect(decided.every((e) => e.data.signed)).toBe(true);
  for (const f of ['a.tar', 'b.tar']) expect(existsSync(join(h.root, f))).toBe(false);
  await replays(jobId);
}, 120_000);
