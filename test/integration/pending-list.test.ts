import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { countingClient as countingClientOf } from '../helpers/counting-client';
import { JobHarness } from '../helpers/job-harness';

let h: JobHarness;
const deleteRules = { version: 1 as const, rules: [{ id: 'approve-deletes', version: 1, name: 'deletes', scope: { categories: ['delete' as const] }, action: 'request_approval' as const }] };
beforeAll(async () => {
  h = await JobHarness.create({ rules: deleteRules });
});
afterAll(async () => h.close());

const countingClient = () => countingClientOf(h);

async function parkDelete(name: string, viaClient: boolean): Promise<string> {
  writeFileSync(join(h.root, name), name);
  const script = {
    turns: [
      { tool_calls: [{ name: 'fs_delete', arguments: { path: name } }] },
      { tool_calls: [{ name: 'complete', arguments: { summary: `deleted ${name}` } }] },
    ],
  };
  const jobId = `pending-${name}-${Date.now()}`;
  if (viaClient) {
    // The product's own start: the job begins with an empty memo.
    h.replay.setScript(script);
    await h.airlock.startJob({ goal: `delete ${name}`, jobId, requester: 'tester' });
  } else {
    await h.start({ script, jobId, goal: `delete ${name}` });
  }
  await h.waitForPending(jobId);
  return jobId;
}

test('`pending` is one visibility listing whatever the number of parked jobs, and needs no worker', async () => {
  const jobIds = [];
  for (let i = 0; i < 5; i++) jobIds.push(await parkDelete(`p${i}.txt`, i % 2 === 0));
  // Nothing polls the queues now: a query would hang, the memo does not need one.
  await h.stopWorkers();
  const { client, calls } = await countingClient();
  try {
    let listed = await client.listPending();
    // Visibility is eventually consistent: wait until it shows all five.
    for (let i = 0; i < 50 && listed.length < jobIds.length; i++) {
      await new Promise((r) => setTimeout(r, 200));
      calls.length = 0;
      listed = await client.listPending();
    }
    expect(listed.map((j) => j.jobId).sort()).toEqual([...jobIds].sort());
    for (const job of listed) {
      expect(job.goal).toBe(`delete ${job.jobId.split('-')[1]}`);
      expect(job.pending).toHaveLength(1);
      expect(job.pending[0]).toMatchObject({ toolName: 'fs_delete', ruleId: 'approve-deletes' });
      expect(job.pending[0]?.nonce).toMatch(/\S/);
    }
    expect(calls).toEqual(['ListWorkflowExecutions']);

    // The request a reviewer decides on is read from the job's record, also without a worker.
    const first = jobIds[0] ?? '';
    calls.length = 0;
    const lookedUp = await client.pendingOf(first);
    expect(calls).toEqual(['DescribeWorkflowExecution']);
    expect(lookedUp.pending.map((r) => r.requestId)).toEqual(listed.find((j) => j.jobId === first)?.pending.map((r) => r.requestId));
  } finally {
    await client.close();
    await h.resumeWorkers();
  }

  // What the listing gave is enough to decide: every job completes its approved delete.
  for (const jobId of jobIds) expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: true });
  for (const [i, jobId] of jobIds.entries()) {
    expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
    expect(existsSync(join(h.root, `p${i}.txt`))).toBe(false);
  }
  // Decided requests leave the memo: a job no longer waiting lists nothing.
  const after = await h.airlock.pendingOf(jobIds[0] ?? '');
  expect(after.pending).toEqual([]);
});

test('a long write is listed as a preview, and the decision still binds the whole content', async () => {
  const content = 'x'.repeat(200_000);
  const rulesJob = `pending-write-${Date.now()}`;
  h.setRules({ version: 1, rules: [{ id: 'approve-writes', version: 1, name: 'writes', scope: { tools: ['fs_write'] }, action: 'request_approval' }] });
  await h.start({
    jobId: rulesJob,
    script: {
      turns: [
        { tool_calls: [{ name: 'fs_write', arguments: { path: 'long.txt', content } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'written' } }] },
      ],
    },
  });
  await h.waitForPending(rulesJob);
  const { pending } = await h.airlock.pendingOf(rulesJob);
  const args = pending[0]?.args as { content?: unknown } | undefined;
  expect(typeof args?.content).toBe('string');
  expect(String(args?.content).length).toBeLessThan(1_000);
  expect(await h.airlock.decide(rulesJob, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: true });
  expect(await h.result(rulesJob)).toMatchObject({ status: 'completed' });
  expect(readFileSync(join(h.root, 'long.txt'), 'utf8')).toBe(content);
});

test('approving while no agent worker runs says so, and the decision applies once a worker starts', async () => {
  h.setRules(deleteRules);
  const jobId = await parkDelete('later.txt', true);
  await h.stopWorkers();
  const { client } = await countingClient();
  try {
    const outcome = await client.decide(jobId, { decision: 'approve', reviewer: 'alice', workerWaitMs: 2000 });
    expect(outcome).toMatchObject({ accepted: 'queued', jobId });
    if (outcome.accepted !== 'queued') throw new Error('expected a queued decision');
    expect(outcome.reason).toMatch(/no agent worker took the decision within 2 s .*it was sent and will be applied, or rejected and audited, when an agent worker runs the job/);
    expect(existsSync(join(h.root, 'later.txt'))).toBe(true);
  } finally {
    await client.close();
    await h.resumeWorkers();
  }
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(existsSync(join(h.root, 'later.txt'))).toBe(false);
  expect(h.audit(jobId, 'tool_executed')).toHaveLength(1);
  expect(h.audit(jobId, 'approval_decided')).toHaveLength(1);
  // The update admitted while no worker ran may arrive too: the job rejects it as already decided.
  expect(h.audit(jobId, 'approval_rejected').map((e) => e.data.code).filter((c) => c !== 'already_decided')).toEqual([]);
});
