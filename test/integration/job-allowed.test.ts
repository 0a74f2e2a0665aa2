import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { JobHarness } from '../helpers/job-harness';

let h: JobHarness;

beforeAll(async () => {
  h = await JobHarness.create({
    rules: {
      version: 1,
      instructions: ['Always read before you write.'],
      rules: [
        { id: 'gate-deletes', version: 1, name: 'deletes need approval', scope: { categories: ['delete'] }, action: 'request_approval' },
      ],
    },
  });
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
