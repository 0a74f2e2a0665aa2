import { readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { JobHarness, type RulesInput } from '../helpers/job-harness';

let h: JobHarness;

const rules: RulesInput = {
  version: 1,
  instructions: ['Always read before you write.'],
  rules: [{ id: 'gate-deletes', version: 1, name: 'deletes need approval', scope: { categories: ['delete'] }, action: 'request_approval' }],
};

beforeAll(async () => {
  h = await JobHarness.create({ rules });
});
afterAll(async () => h.close());
afterEach(async () => h.terminateRunning());

test('an allowed fs_read runs once, without approval, and the model sees its output', async () => {
  writeFileSync(join(h.root, 'hello.txt'), 'hello from the server');
  const { jobId } = await h.start({
    script: {
      turns: [
        { tool_calls: [{ name: 'fs_read', arguments: { path: 'hello.txt' } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'read it' } }] },
      ],
    },
  });
  const result = await h.result(jobId);
  expect(result).toMatchObject({ status: 'completed', summary: 'read it', turns: 2 });

  // The second model request carries the tool result of the first call.
  const requests = h.requestsOf(jobId);
  expect(requests).toHaveLength(2);
  const second = requests[1]!.messages;
  expect(second.map((m) => m.role)).toEqual(['system', 'user', 'assistant', 'tool']);
  expect(second[3]).toMatchObject({ tool_call_id: 'call_0_0', content: 'hello from the server' });
  // Always-on instructions reach the system prompt; the goal is the user message.
  expect(String(second[0]!.content)).toContain('Always read before you write.');

  expect(h.audit(jobId, 'approval_requested')).toHaveLength(0);
  const executed = h.audit(jobId, 'tool_executed');
  expect(executed).toHaveLength(1);
  expect(executed[0]!.data).toMatchObject({ toolName: 'fs_read', ok: true, replayed: false });
  const state = await h.state(jobId);
  expect(state.counters).toMatchObject({ toolCallsExecuted: 1, approvalRequests: 0 });
});

test('invalid JSON, unknown tools and schema errors get ordinary error results and run nothing', async () => {
  const { jobId } = await h.start({
    script: {
      turns: [
        {
          tool_calls: [
            { name: 'fs_read', arguments: '{not json' },
            { name: 'rm_rf', arguments: { path: '/' } },
            { name: 'fs_write', arguments: { path: 'x.txt' } },
          ],
        },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'gave up' } }] },
      ],
    },
  });
  await h.result(jobId);
  const results = h.toolResults(jobId);
  expect(results.get('call_0_0')).toMatch(/not valid JSON/);
  expect(results.get('call_0_1')).toMatch(/unknown tool "rm_rf"/);
  expect(results.get('call_0_2')).toMatch(/invalid arguments for fs_write: content/);
  expect(h.audit(jobId, 'tool_executed')).toHaveLength(0);
});

test('a text-only turn is nudged and the turn limit ends the job as failed(max_turns)', async () => {
  const { jobId } = await h.start({
    script: { turns: [{ content: 'thinking' }, { content: 'still thinking' }] },
    input: { maxTurns: 2 },
  });
  expect(await h.result(jobId)).toMatchObject({ status: 'failed', reason: 'max_turns', turns: 2 });
  const last = h.lastMessages(jobId);
  expect(last[last.length - 1]).toMatchObject({ role: 'user' });
  expect(String(last[last.length - 1]!.content)).toMatch(/call `complete`/);
});

test('an allowed write of a megabyte that once made masking hang completes, audited and masked', async () => {
  // Hex digits made the old URL-credential pattern quadratic: a job with this write stopped progressing.
  const content = `DB_PASSWORD=hunter2\n${'0123456789abcdef'.repeat(65_536)}`.slice(0, 1_048_576);
  h.setRules({
    version: 1,
    rules: [{ id: 'audit-changes', version: 1, name: 'file changes are audited', scope: { categories: ['file_change'] }, action: 'audit_only' }],
  });
  try {
    const { jobId } = await h.start({
      script: {
        turns: [
          { tool_calls: [{ name: 'fs_write', arguments: { path: 'big.hex', content } }] },
          { tool_calls: [{ name: 'complete', arguments: { summary: 'wrote it' } }] },
        ],
      },
    });
    expect(await h.result(jobId)).toMatchObject({ status: 'completed', summary: 'wrote it', turns: 2 });
    expect(readFileSync(join(h.root, 'big.hex'), 'utf8')).toBe(content);
    expect(h.audit(jobId, 'policy_rule_matched')).toEqual([expect.objectContaining({ data: expect.objectContaining({ ruleId: 'audit-changes' }) })]);
    expect(h.audit(jobId, 'tool_executed')).toEqual([expect.objectContaining({ data: expect.objectContaining({ toolName: 'fs_write', ok: true }) })]);
    // The summary is short, masked, and says how much it left out.
    const [evaluation] = h.audit(jobId, 'policy_evaluation');
    const summary = evaluation?.data.argsSummary ?? '';
    expect(summary.length).toBeLessThan(400);
    expect(summary).toContain('DB_PASSWORD=***');
    expect(summary).not.toContain('hunter2');
    expect(summary).toMatch(/… \(\d+ more characters\)$/);
  } finally {
    h.setRules(rules);
  }
});

test('a parked write of a megabyte (the most a write takes) shows to reviewers masked, at every query, and runs once approved', async () => {
  // Every activity input carries the arguments once, so the largest write stays under Temporal's 2 MB per payload.
  const content = `api_token: s3cr3t-value\nhttps://user:${'ab'.repeat(524_288)}`.slice(0, 1_048_576);
  h.setRules({
    version: 1,
    rules: [{ id: 'approve-changes', version: 1, name: 'file changes need approval', scope: { categories: ['file_change'] }, action: 'request_approval' }],
  });
  try {
    const { jobId } = await h.start({
      script: {
        turns: [
          { tool_calls: [{ name: 'fs_write', arguments: { path: 'big.txt', content } }] },
          { tool_calls: [{ name: 'complete', arguments: { summary: 'wrote it' } }] },
        ],
      },
    });
    const parked = await h.waitForPending(jobId);
    // The reviewer view masks the whole argument, inside the workflow's query handler.
    const shown = (parked.pending[0]?.args ?? {}) as { content?: string };
    expect(shown.content?.startsWith('api_token: ***\nhttps://user:abab')).toBe(true);
    expect(shown.content).toHaveLength(content.length - 'api_token: s3cr3t-value'.length + 'api_token: ***'.length);
    // Asked again, the query masks the megabyte again and answers the same. How long it takes is a bench
    // figure (`npm run bench -- --only approval`); that masking this text takes linear time, not a hang,
    // is masking.test.ts's ('URL user and no "@"').
    expect((await h.state(jobId)).pending[0]?.args).toEqual(shown);
    await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' });
    expect(await h.result(jobId)).toMatchObject({ status: 'completed', summary: 'wrote it' });
    expect(readFileSync(join(h.root, 'big.txt'), 'utf8')).toBe(content);
  } finally {
    h.setRules(rules);
  }
});

test('read-only calls that follow one another run together; a write keeps its place between reads', async () => {
  writeFileSync(join(h.root, 'a.txt'), 'A');
  writeFileSync(join(h.root, 'b.txt'), 'B');
  const { jobId, handle } = await h.start({
    script: {
      turns: [
        {
          tool_calls: [
            { name: 'fs_read', arguments: { path: 'a.txt' } },
            { name: 'fs_read', arguments: { path: 'b.txt' } },
            { name: 'fs_stat', arguments: { path: 'a.txt' } },
            { name: 'fs_write', arguments: { path: 'c.txt', content: 'written in the batch' } },
            { name: 'fs_read', arguments: { path: 'c.txt' } },
            { name: 'fs_read', arguments: { path: 'b.txt' } },
          ],
        },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] },
      ],
    },
  });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  // Results in call order, and the read after the write sees it.
  const results = h.toolResults(jobId);
  expect([...results.keys()]).toEqual(['call_0_0', 'call_0_1', 'call_0_2', 'call_0_3', 'call_0_4', 'call_0_5']);
  expect(results.get('call_0_0')).toBe('A');
  expect(results.get('call_0_1')).toBe('B');
  expect(results.get('call_0_4')).toBe('written in the batch');
  expect(results.get('call_0_5')).toBe('B');

  // From history: which executions were scheduled while another was still running.
  const events = (await handle.fetchHistory()).events ?? [];
  const running = new Set<string>();
  const startedTogether: string[][] = [];
  let current: string[] = [];
  for (const e of events) {
    const scheduled = e.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name === 'execute') {
      const id = String(e.eventId);
      const payload = scheduled.input?.payloads?.[0];
      const input: unknown = payload === undefined ? undefined : defaultPayloadConverter.fromPayload(payload);
      if (running.size === 0) {
        current = [];
        startedTogether.push(current);
      }
      running.add(id);
      current.push(basename(String((input as { args?: { path?: string } } | undefined)?.args?.path)));
    }
    const done = e.activityTaskCompletedEventAttributes ?? e.activityTaskFailedEventAttributes;
    if (done !== undefined && done !== null) running.delete(String(done.scheduledEventId));
  }
  expect(startedTogether).toEqual([['a.txt', 'b.txt', 'a.txt'], ['c.txt'], ['c.txt', 'b.txt']]);
});
