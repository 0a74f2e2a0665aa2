import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { JobHarness } from '../helpers/job-harness';

let h: JobHarness;
beforeAll(async () => {
  // A cache of two: most parked jobs are evicted and must be replayed from history when they wake.
  h = await JobHarness.create({
    workflowCache: 2,
    rules: { version: 1, rules: [{ id: 'approve-deletes', version: 1, name: 'deletes', scope: { categories: ['delete'] }, action: 'request_approval' }] },
  });
});
afterAll(async () => h.close());

test('parked jobs survive eviction from the worker cache and complete when approved', async () => {
  const jobs = [];
  for (let i = 0; i < 6; i++) {
    writeFileSync(join(h.root, `evict-${i}.txt`), `${i}`);
    const script = {
      turns: [
        { tool_calls: [{ name: 'fs_read', arguments: { path: `evict-${i}.txt` } }] },
        { tool_calls: [{ name: 'fs_delete', arguments: { path: `evict-${i}.txt` } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'deleted' } }] },
      ],
    };
    const started = await h.start({ script, jobId: `evict-${i}-${Date.now()}` });
    await h.waitForPending(started.jobId);
    jobs.push(started);
  }
  // Six parked, at most two held: the others were let go and are replayed from history when the decision wakes them.
  expect(h.cachedWorkflows()).toBeLessThanOrEqual(2);
  for (const { jobId } of jobs) expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: true });
  for (const [i, { jobId }] of jobs.entries()) {
    expect(await h.result(jobId)).toMatchObject({ status: 'completed', summary: 'deleted' });
    expect(existsSync(join(h.root, `evict-${i}.txt`))).toBe(false);
  }
});
