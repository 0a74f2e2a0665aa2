import { JobHarness } from '../helpers/job-harness';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * What the Web UI offers a person to send: the decision signal and update,
 * never the client's internal report of a rejected update; and that report
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
  await h.waitForPending(jobId);
  const metadata = await h.env.client.workflow
    .getHandle(jobId)
    .query<{ definition: { signalDefinitions: Array<{ name: string }>; updateDefinitions: Array<{ name: string }> } }>('__temporal_workflow_metadata');
  expect(metadata.definition.signalDefinitions.map((s) => s.name)).toEqual(['approvalDecision']);
  expect(metadata.definition.updateDefinitions.map((u) => u.name)).toEqual(['decide']);

  // alice may not decide: the update's validator refuses (no history), the client reports it, the job audits it.
  expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: false });
  await h.waitFor(jobId, () => h.audit(jobId, 'approval_rejected').length > 0, 'the reported rejection audited');
  expect(h.audit(jobId, 'approval_rejected')[0]?.data).toMatchObject({ reviewer: 'alice', via: 'update' });
  expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'bob' })).toMatchObject({ accepted: true });
  expect((await h.result(jobId)).status).toBe('completed');
});
