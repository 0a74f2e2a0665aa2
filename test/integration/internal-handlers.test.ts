import { JobHarness } from '../helpers/job-harness';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What the Web UI offers a person to send: the decision signal and update,
 * and an operator's withdrawal of what the job waits for; never the
 * client's internal report of a rejected update; and that report
 * still reaches the job, which audits the rejection.
 */
let h: JobHarness;

beforeAll(async () => {
  h = await JobHarness.create({
    rules: {
      version: 1,
      rules: [{ id: 'bob-decides', version: 1, name: 'Deletes need bob', scope: { categories: ['delete'] }, action: 'request_approval', approval: { reviewers: ['bob'] } }],
    },
  });
});
afterAll(async () => h.close());

test('the internal report is not listed as a signal, and a rejected update it reports is audited', async () => {
  writeFileSync(join(h.root, 'old.tar'), 'old');
  const { jobId } = await h.start({
    script: { turns: [{ tool_calls: [{ name: 'fs_delete', arguments: { path: 'old.tar' } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] }] },
  });
  const [request] = (await h.waitForPending(jobId)).pending;
  if (request === undefined) throw new Error('no pending request');
  const metadata = await h.env.client.workflow
    .getHandle(jobId)
    .query<{ definition: { signalDefinitions: Array<{ name: string }>; updateDefinitions: Array<{ name: string }> } }>('__temporal_workflow_metadata');
  expect(metadata.definition.signalDefinitions.map((s) => s.name)).toEqual(['approvalDecision']);
  expect(metadata.definition.updateDefinitions.map((u) => u.name)).toEqual(['decide', 'withdrawRequests']);

  // alice may not decide: airlock's client says so without sending anything.
  expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: false, code: 'reviewer_not_allowed' });
  expect(h.audit(jobId, 'approval_rejected')).toEqual([]);
  // Sent anyway (any Temporal client can): the update's validator refuses (no history), the client reports it, the job audits it.
  const asAlice = { requestId: request.requestId, fingerprint: request.fingerprint, nonce: request.nonce, decision: 'approve' as const, reviewer: 'alice' };
  expect(await h.airlock.sendDecision(jobId, asAlice)).toMatchObject({ accepted: false, code: 'reviewer_not_allowed' });
  await h.waitFor(jobId, () => h.audit(jobId, 'approval_rejected').length > 0, 'the reported rejection audited');
  expect(h.audit(jobId, 'approval_rejected')[0]?.data).toMatchObject({ reviewer: 'alice', via: 'update' });
  expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'bob' })).toMatchObject({ accepted: true });
  expect((await h.result(jobId)).status).toBe('completed');
});
