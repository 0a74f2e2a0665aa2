import { OpenAI } from 'openai';
import { startReplayServer, type ReplayServer } from '../../ops/dev/replay-server';
import { REPLAY_EXHAUSTED_CONTENT } from '../../core/model/replay-script';

let server: ReplayServer;
let openai: OpenAI;

beforeAll(async () => {
  server = await startReplayServer({
    script: {
      turns: [
        { content: 'looking', tool_calls: [{ name: 'fs_list', arguments: { path: '.' } }, { name: 'fs_read', arguments: '{"path": broken' }] },
        { content: 'done' },
      ],
    },
  });
  openai = new OpenAI({ baseURL: server.baseUrl, apiKey: 'unused', maxRetries: 0 });
});
afterAll(async () => server.close());

test('the real openai client gets turn N for a request holding N assistant messages', async () => {
  const first = await openai.chat.completions.create({ model: 'any', messages: [{ role: 'user', content: 'go' }] });
  const message = first.choices[0]!.message;
  expect(first.choices[0]!.finish_reason).toBe('tool_calls');
  expect(message.content).toBe('looking');
  expect(message.tool_calls).toEqual([
    { id: 'call_0_0', type: 'function', function: { name: 'fs_list', arguments: '{"path":"."}' } },
    { id: 'call_0_1', type: 'function', function: { name: 'fs_read', arguments: '{"path": broken' } },
  ]);

  const history = [
    { role: 'user' as const, content: 'go' },
    { role: 'assistant' as const, content: 'looking', tool_calls: message.tool_calls },
    { role: 'tool' as const, tool_call_id: 'call_0_0', content: 'a.txt' },
    { role: 'tool' as const, tool_call_id: 'call_0_1', content: 'Error' },
  ];
  const second = await openai.chat.completions.create({ model: 'any', messages: history });
  expect(second.choices[0]!.message).toMatchObject({ role: 'assistant', content: 'done' });
  // Stateless: the same request gets the same answer again (a retry, a restarted worker).
  const again = await openai.chat.completions.create({ model: 'any', messages: history });
  expect(again.choices[0]!.message.content).toBe('done');

  const past = await openai.chat.completions.create({
    model: 'any',
    messages: [...history, { role: 'assistant', content: 'done' }, { role: 'user', content: 'more?' }],
  });
  expect(past.choices[0]!.message.content).toBe(REPLAY_EXHAUSTED_CONTENT);
  expect(past.choices[0]!.message.tool_calls).toBeUndefined();

  expect(server.requests.map((r) => r.turn)).toEqual([0, 1, 1, 2]);
});

test('bad requests get OpenAI-style errors', async () => {
  await expect(openai.chat.completions.create({ model: 'any', messages: [{ role: 'user', content: 'x' }], stream: true })).rejects.toMatchObject({
    status: 400,
  });
  const bad = await fetch(`${server.baseUrl}/chat/completions`, { method: 'POST', body: '{nope' });
  expect(bad.status).toBe(400);
  expect(((await bad.json()) as { error: { message: string } }).error.message).toMatch(/not valid JSON/);
  expect((await fetch(`${server.baseUrl}/embeddings`, { method: 'POST', body: '{}' })).status).toBe(404);
});
