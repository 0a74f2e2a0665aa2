import { existsSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { JobHarness, type RulesInput } from '../helpers/job-harness';

const rules: RulesInput = {
  version: 1,
  rules: [
    {
      id: 'backup-conf-first',
      version: 1,
      name: 'Back up configuration before writing it',
      scope: { tools: ['fs_write'] },
      when: { arg: 'path', glob: '**.conf' },
      action: 'inject_instruction',
      instruction: 'Copy the .conf file to a .bak file before changing it.',
    },
    {
      id: 'explain-conf-change',
      version: 1,
      name: 'Say why configuration changes',
      scope: { tools: ['fs_write'] },
      when: { arg: 'path', glob: '**.conf' },
      action: 'inject_instruction',
      instruction: 'Explain in one sentence why the configuration must change.',
    },
    {
      id: 'audit-conf',
      version: 1,
      name: 'Record configuration writes',
      scope: { tools: ['fs_write'] },
      when: { arg: 'path', glob: '**.conf' },
      action: 'audit_only',
      instruction: 'Copy the .conf file to a .bak file before changing it.',
    },
    {
      id: 'no-secrets',
      version: 2,
      name: 'Secrets are off limits',
      scope: { categories: ['read'] },
      when: { arg: 'path', regex: '(^|/)secret' },
      action: 'deny_current_tool',
      instruction: 'Secret files are never read by agents.',
    },
    {
      id: 'stop-world-writable',
      version: 1,
      name: 'World-writable permissions stop the job',
      scope: { tools: ['fs_chmod'] },
      when: { arg: 'mode', in: ['777', '0777', '666', '0666'] },
      action: 'stop_task',
    },
    {
      id: 'approve-deletes',
      version: 1,
      name: 'Deleting needs approval',
      scope: { categories: ['delete'] },
      action: 'request_approval',
    },
    {
      id: 'summary-mentions-report',
      version: 1,
      name: 'The summary names the report',
      point: 'completion.before_accept',
      when: { not: { arg: 'summary', regex: 'report' } },
      action: 'deny_current_tool',
      instruction: 'Mention where the report was written in your summary.',
    },
  ],
};

let h: JobHarness;

beforeAll(async () => {
  h = await JobHarness.create({ rules });
});
afterAll(async () => h.close());
afterEach(async () => {
  h.setRules(rules);
  await h.terminateRunning();
});

test('redirect: no call of the batch runs, every call gets a result, then exactly one merged instruction message', async () => {
  writeFileSync(join(h.root, 'ok.txt'), 'fine');
  const writes = [
    { name: 'fs_write', arguments: { path: 'app.conf', content: 'a=1', mode: 'overwrite' } },
    { name: 'fs_write', arguments: { path: 'db.conf', content: 'b=2', mode: 'overwrite' } },
    { name: 'fs_read', arguments: { path: 'ok.txt' } },
  ];
  const { jobId } = await h.start({
    script: {
      turns: [
        { tool_calls: writes },
        // The model repeats the first call unchanged: the same redirect twice becomes a deny.
        { tool_calls: [writes[0]!] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'report: nothing changed' } }] },
      ],
    },
  });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(existsSync(join(h.root, 'app.conf'))).toBe(false);
  expect(existsSync(join(h.root, 'db.conf'))).toBe(false);
  expect(h.audit(jobId, 'tool_executed')).toHaveLength(0);

  const second = h.requestsOf(jobId)[1]!.messages;
  expect(second.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'tool', 'tool', 'user']);
  expect(second.slice(3, 6).map((m) => m.tool_call_id)).toEqual(['call_0_0', 'call_0_1', 'call_0_2']);
  expect(second[3]!.content).toMatch(/^Not executed: policy rule backup-conf-first asks you to re-plan/);
  expect(second[5]!.content).toMatch(/^Not executed: other calls in this batch must be re-planned first/);
  const injected = String(second[6]!.content);
  expect(injected.match(/Copy the \.conf file/g)).toHaveLength(1);
  expect(injected).toContain('1. Copy the .conf file to a .bak file before changing it.');
  expect(injected).toContain('2. Explain in one sentence why the configuration must change.');
  expect(h.audit(jobId, 'policy_instruction_injected')).toHaveLength(1);

  expect(h.toolResults(jobId).get('call_1_0')).toMatch(/already asked you to re-plan this exact call; repeating it unchanged is denied/);
});

test('deny only: the denied call gets an error result with the registered text, the rest of the batch runs', async () => {
  writeFileSync(join(h.root, 'secret.key'), 'hunter2');
  writeFileSync(join(h.root, 'readme.txt'), 'public');
  const { jobId } = await h.start({
    script: {
      turns: [
        {
          tool_calls: [
            { name: 'fs_read', arguments: { path: 'secret.key' } },
            { name: 'fs_read', arguments: { path: 'readme.txt' } },
          ],
        },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'report: read the readme' } }] },
      ],
    },
  });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  const results = h.toolResults(jobId);
  expect(results.get('call_0_0')).toBe('Not executed: policy rule no-secrets denies this call. Secret files are never read by agents.');
  expect(results.get('call_0_1')).toBe('public');
  expect(h.audit(jobId, 'policy_tool_denied')[0]!.data).toMatchObject({ ruleId: 'no-secrets' });
  expect(h.audit(jobId, 'tool_executed')).toHaveLength(1);
});

test('stop: nothing runs, every call gets a result, the job ends aborted(policy_stopped) and is not retried', async () => {
  const file = join(h.root, 'run.sh');
  writeFileSync(file, '#!/bin/sh\n', { mode: 0o644 });
  const { jobId, handle } = await h.start({
    script: {
      turns: [
        {
          tool_calls: [
            { name: 'fs_read', arguments: { path: 'run.sh' } },
            { name: 'fs_chmod', arguments: { path: 'run.sh', mode: '777' } },
          ],
        },
      ],
    },
  });
  expect(await h.result(jobId)).toMatchObject({ status: 'aborted', reason: 'policy_stopped', detail: 'stopped by rule stop-world-writable' });
  expect((statSync(file).mode & 0o777).toString(8)).toBe('644');
  const described = await handle.describe();
  expect(described.status.name).toBe('COMPLETED');
  expect(described.runId).toBe(handle.firstExecutionRunId);
  expect(h.audit(jobId, 'tool_executed')).toHaveLength(0);
  expect(h.audit(jobId, 'policy_task_stopped')).toHaveLength(1);
  // The model is not asked again; the state still shows every call answered.
  expect(h.requestsOf(jobId)).toHaveLength(1);
  const state = await h.state(jobId);
  expect(state.status).toBe('aborted');
});

test('completion gate: a completion rule rejects complete once, with its instruction; the next complete is accepted', async () => {
  const { jobId } = await h.start({
    script: {
      turns: [
        { tool_calls: [{ name: 'complete', arguments: { summary: 'all done' } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'all done' } }] },
      ],
    },
  });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed', summary: 'all done', turns: 2 });
  const second = h.requestsOf(jobId)[1]!.messages;
  expect(second.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool', 'user']);
  expect(second[3]!.content).toBe('Error: completion is not accepted yet (rule summary-mentions-report): Mention where the report was written in your summary.');
  expect(String(second[4]!.content)).toContain('Mention where the report was written');
});

test('a rule edit after a job started does not change that job; a new job gets the new rules', async () => {
  for (const name of ['a.txt', 'b.txt', 'c.txt']) writeFileSync(join(h.root, name), name);
  const first = await h.start({
    script: {
      turns: [
        { tool_calls: [{ name: 'fs_delete', arguments: { path: 'a.txt' } }] },
        { tool_calls: [{ name: 'fs_delete', arguments: { path: 'b.txt' } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'report: done' } }] },
      ],
    },
  });
  await h.waitForPending(first.jobId);
  h.setRules({ version: 1, rules: [] });
  await h.airlock.decide(first.jobId, { decision: 'approve', reviewer: 'alice' });
  // The next delete of the same job is still gated by the job's snapshot.
  const again = await h.waitFor(first.jobId, (s) => s.pending.some((r) => r.callId === 'call_1_0'), 'second request');
  expect(again.pending[0]).toMatchObject({ ruleId: 'approve-deletes', toolName: 'fs_delete' });
  await h.airlock.decide(first.jobId, { decision: 'deny', reviewer: 'alice', reason: 'enough' });
  expect(await h.result(first.jobId)).toMatchObject({ status: 'completed' });
  expect(existsSync(join(h.root, 'a.txt'))).toBe(false);
  expect(existsSync(join(h.root, 'b.txt'))).toBe(true);

  const second = await h.start({
    script: {
      turns: [
        { tool_calls: [{ name: 'fs_delete', arguments: { path: 'c.txt' } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] },
      ],
    },
  });
  expect(await h.result(second.jobId)).toMatchObject({ status: 'completed' });
  expect(existsSync(join(h.root, 'c.txt'))).toBe(false);
  expect(h.audit(second.jobId, 'approval_requested')).toHaveLength(0);
  const [firstPolicy, secondPolicy] = [await h.state(first.jobId), await h.state(second.jobId)].map((s) => s.policyVersion);
  expect(firstPolicy).not.toBe(secondPolicy);
});

test('the approval budget: past maxApprovalRequests a gated call is denied without a request', async () => {
  writeFileSync(join(h.root, 'c.txt'), 'c');
  writeFileSync(join(h.root, 'd.txt'), 'd');
  const { jobId } = await h.start({
    script: {
      turns: [
        {
          tool_calls: [
            { name: 'fs_delete', arguments: { path: 'c.txt' } },
            { name: 'fs_delete', arguments: { path: 'd.txt' } },
          ],
        },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'report: one deleted' } }] },
      ],
    },
    input: { maxApprovalRequests: 1 },
  });
  const parked = await h.waitForPending(jobId);
  expect(parked.pending.map((r) => r.callId)).toEqual(['call_0_0']);
  await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(existsSync(join(h.root, 'c.txt'))).toBe(false);
  expect(existsSync(join(h.root, 'd.txt'))).toBe(true);
  expect(h.toolResults(jobId).get('call_0_1')).toBe('Not executed: this job reached its limit of 1 approval requests.');
});
