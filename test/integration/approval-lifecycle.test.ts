import { appendFileSync, existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AgentJobStateView } from '../../core/job/job-view';
import { JobHarness } from '../helpers/job-harness';
import { expectRunReplays } from '../helpers/replays';

let h: JobHarness;

beforeAll(async () => {
  h = await JobHarness.create({
    rules: {
      version: 1,
      rules: [
        {
          id: 'approve-deletes',
          version: 1,
          name: 'Deleting needs approval',
          scope: { categories: ['delete'] },
          action: 'request_approval',
          when: { not: { arg: 'path', glob: '**/*.tmp' } },
        },
        {
          id: 'quick-deletes',
          version: 1,
          name: 'Temporary files: short approval window',
          scope: { categories: ['delete'] },
          action: 'request_approval',
          when: { arg: 'path', glob: '**/*.tmp' },
          approval: { ttl: '2s' },
        },
      ],
    },
  });
});
afterAll(async () => h.close());
afterEach(async () => h.terminateRunning());

test('an approval that nobody decides within its TTL expires and the call does not run', async () => {
  const file = join(h.root, 'scratch.tmp');
  writeFileSync(file, 'scratch');
  const { jobId } = await h.start({
    script: {
      turns: [
        { tool_calls: [{ name: 'fs_delete', arguments: { path: 'scratch.tmp' } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'nothing deleted' } }] },
      ],
    },
  });
  const parked = await h.waitForPending(jobId);
  expect(Date.parse(parked.pending[0]!.expiresAt) - Date.parse(parked.pending[0]!.createdAt)).toBe(2000);
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(existsSync(file)).toBe(true);
  expect(h.toolResults(jobId).get('call_0_0')).toBe('Not executed: the approval request expired before anyone decided.');
  expect(h.audit(jobId, 'approval_expired')).toHaveLength(1);
  expect(h.audit(jobId, 'tool_executed')).toHaveLength(0);
  const state = await h.state(jobId);
  expect(state.decided[0]).toMatchObject({ status: 'expired' });
});

test('a file that changed after prepare is not deleted on approval, and the model is told why', async () => {
  const file = join(h.root, 'log.txt');
  writeFileSync(file, 'line 1\n');
  const { jobId } = await h.start({
    script: {
      turns: [
        { tool_calls: [{ name: 'fs_delete', arguments: { path: 'log.txt' } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'left it' } }] },
      ],
    },
  });
  await h.waitForPending(jobId);
  appendFileSync(file, 'line 2 written while the request was parked\n');
  const outcome = await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' });
  expect(outcome.accepted).toBe(true);
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(readFileSync(file, 'utf8')).toContain('line 2');
  const result = h.toolResults(jobId).get('call_0_0')!;
  expect(result).toMatch(/^Not executed: the approved call no longer holds: the target changed since it was approved: /);
  expect(result).toMatch(/size 7 → \d+ bytes/);
  expect(result).toMatch(/content changed/);
  expect(h.audit(jobId, 'tool_executed')).toHaveLength(0);
});

test('in a batch with one gated and one allowed call, the allowed call waits for the decision too', async () => {
  const doomed = join(h.root, 'doomed.txt');
  const report = join(h.root, 'report.txt');
  writeFileSync(doomed, 'x');
  const { jobId } = await h.start({
    script: {
      turns: [
        {
          tool_calls: [
            { name: 'fs_write', arguments: { path: 'report.txt', content: 'cleanup report' } },
            { name: 'fs_delete', arguments: { path: 'doomed.txt' } },
            { name: 'complete', arguments: { summary: 'too early' } },
          ],
        },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'done for real' } }] },
      ],
    },
  });
  await h.waitForPending(jobId);
  // Parked: neither call of the batch has run.
  await new Promise((r) => setTimeout(r, 500));
  expect(existsSync(report)).toBe(false);
  expect(existsSync(doomed)).toBe(true);

  await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed', summary: 'done for real' });
  expect(readFileSync(report, 'utf8')).toBe('cleanup report');
  expect(existsSync(doomed)).toBe(false);
  const results = h.toolResults(jobId);
  expect(results.get('call_0_0')).toMatch(/^wrote 14 bytes/);
  expect(results.get('call_0_1')).toBe(`deleted ${doomed}`);
  expect(results.get('call_0_2')).toMatch(/^Not accepted: complete was proposed together with calls that were held/);
  // One tool message per call id, in call order, right after the assistant message.
  const roles = h.lastMessages(jobId).map((m) => m.role);
  expect(roles).toEqual(['system', 'user', 'assistant', 'tool', 'tool', 'tool']);
});

test('a job that continues as new while parked keeps its request, nonce and decision', async () => {
  const file = join(h.root, 'big-history.txt');
  writeFileSync(file, 'content');
  const { jobId, handle } = await h.start({
    script: {
      turns: [
        { tool_calls: [{ name: 'fs_stat', arguments: { path: 'big-history.txt' } }] },
        { tool_calls: [{ name: 'fs_delete', arguments: { path: 'big-history.txt' } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'deleted after a long wait' } }] },
      ],
    },
    // About 64 events by the time it parks: a margin for the workflow tasks a loaded machine times out,
    // which would otherwise push it past the limit at a turn before it parks.
    input: { historyEventLimit: 90 },
  });
  const before = await h.waitForPending(jobId);
  expect(before.counters.continuedAsNew).toBe(0);
  const request = before.pending[0]!;
  // While parked, history grows only with what arrives: stray decisions (each audited) push it past the limit.
  let after = await stateOf(jobId);
  let strays = 0;
  for (; strays < 30 && after.counters.continuedAsNew === 0; strays++) {
    await h.airlock.sendDecision(jobId, { requestId: 'stray', fingerprint: request.fingerprint, nonce: request.nonce, decision: 'approve', reviewer: 'nobody' });
    after = await stateOf(jobId);
  }
  // Every stray is counted once, in the run that took it, and the count is carried across continue-as-new.
  // (On a loaded machine, timed-out workflow tasks can fill history first: then fewer strays are sent.)
  after = await h.waitFor(jobId, (s) => s.counters.continuedAsNew >= 1 && s.pending.length === 1 && s.counters.rejectedDecisions === strays, 'continue-as-new while parked');
  expect(after.status).toBe('awaiting_approval');
  expect(after.pending[0]).toMatchObject({ requestId: request.requestId, nonce: request.nonce, fingerprint: request.fingerprint });
  const described = await handle.describe();
  expect(described.runId).not.toBe(handle.firstExecutionRunId);
  expect(existsSync(file)).toBe(true);

  const outcome = await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' });
  expect(outcome).toMatchObject({ accepted: true, requestId: request.requestId });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed', summary: 'deleted after a long wait' });
  expect(existsSync(file)).toBe(false);
  expect(h.audit(jobId, 'tool_executed').filter((e) => e.data.toolName === 'fs_delete')).toHaveLength(1);
  const final = await h.state(jobId);
  expect(final.decided.find((d) => d.requestId === request.requestId)).toMatchObject({ status: 'approved', reviewer: 'alice' });

  // Both runs replay: the decision to continue as new is read from history alone, so a worker that restarts
  // (or answers a query on the closed first run) takes the same path.
  const history = await h.env.client.workflow.getHandle(jobId, handle.firstExecutionRunId).fetchHistory();
  await expectRunReplays(history, jobId, `${jobId}-run1`);
  await expectRunReplays(await h.env.client.workflow.getHandle(jobId, described.runId).fetchHistory(), jobId, `${jobId}-run2`);
  // The baseline carries no patch: changes ship as new builds, and a patch marker here would mean one slipped in.
  const patches = (history.events ?? []).filter((e) => e.markerRecordedEventAttributes?.markerName === 'core_patch');
  expect(patches).toEqual([]);
});

/**
 * The state query while stray decisions push the run over its limit. A
 * query that reaches the run in the moment it continues as new may fail on
 * the worker answering it (the run's histories replay, checked above); the
 * next one reaches the current run.
 */
async function stateOf(jobId: string): Promise<AgentJobStateView> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await h.state(jobId);
    } catch (err) {
      if (attempt >= 5) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}
