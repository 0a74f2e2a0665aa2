import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { temporal } from '@temporalio/proto';
import { JobHarness } from '../helpers/job-harness';

/** What one event puts into history: its attributes, payloads included. */
function eventBytes(e: temporal.api.history.v1.IHistoryEvent): number {
  return Buffer.byteLength(JSON.stringify(e, (_k, v: unknown) => (v instanceof Uint8Array ? Buffer.from(v).toString('base64') : v)));
}

/** History grouped by model turn: the events from one `modelTurn` activity to the next. */
function bytesPerTurn(events: readonly temporal.api.history.v1.IHistoryEvent[]): number[] {
  const turns: number[] = [];
  for (const e of events) {
    if (e.activityTaskScheduledEventAttributes?.activityType?.name === 'modelTurn') turns.push(0);
    if (turns.length > 0) turns[turns.length - 1] = (turns[turns.length - 1] ?? 0) + eventBytes(e);
  }
  return turns;
}

let h: JobHarness;
beforeAll(async () => {
  h = await JobHarness.create({ rules: { version: 1, rules: [] } });
  for (let i = 0; i < 10; i++) writeFileSync(join(h.root, `big-${i}.txt`), `${i}`.repeat(16_000));
});
afterAll(async () => h.close());

const reads = (n: number) => Array.from({ length: n }, (_v, i) => ({ name: 'fs_read', arguments: { path: `big-${i}.txt` } }));

test('history per turn stays flat as the conversation grows: the conversation lives in the content store', async () => {
  const turns = 16;
  const { jobId, handle } = await h.start({
    script: { turns: [...Array.from({ length: turns }, () => ({ tool_calls: reads(1) })), { tool_calls: [{ name: 'complete', arguments: { summary: 'read' } }] }] },
  });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  const events = (await handle.fetchHistory()).events ?? [];
  const perTurn = bytesPerTurn(events).slice(0, turns);
  expect(perTurn).toHaveLength(turns);
  // The model saw the whole conversation every turn, yet the history of a late turn is no larger than an early one's.
  expect(h.lastMessages(jobId).filter((m) => m.role === 'tool')).toHaveLength(turns);
  const early = Math.max(...perTurn.slice(1, 4));
  const late = Math.max(...perTurn.slice(-3));
  expect(late).toBeLessThan(early * 1.25);
  // Budget per event: a turn's history carries its own tool output (twice: result and next input), never the conversation.
  for (const e of events) expect(eventBytes(e)).toBeLessThan(100_000);
});

test('a job reading ten 16,000-character files per batch for 30 turns completes normally', async () => {
  const { jobId, handle } = await h.start({
    script: { turns: [...Array.from({ length: 30 }, () => ({ tool_calls: reads(10) })), { tool_calls: [{ name: 'complete', arguments: { summary: 'read it all' } }] }] },
    input: { maxTurns: 40 },
  });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed', turns: 31 });
  const state = await h.state(jobId);
  expect(state.counters.toolCallsExecuted).toBe(300);
  // What the model got fits its budget: the latest results whole, older ones left out with a note.
  const last = h.lastMessages(jobId);
  const tool = last.filter((m) => m.role === 'tool').map((m) => String(m.content));
  expect(tool).toHaveLength(300);
  expect(tool.slice(-10).every((t) => t.length >= 16_000)).toBe(true);
  expect(tool.some((t) => t.includes('left out to fit the model'))).toBe(true);
  const sent = last.reduce((n, m) => n + (typeof m.content === 'string' ? m.content.length : 0), 0);
  expect(sent).toBeLessThan(400_000 + 50_000);
  // Every run's history stays far from Temporal's limits.
  const events = (await handle.fetchHistory()).events ?? [];
  for (const e of events) expect(eventBytes(e)).toBeLessThan(512 * 1024);
});
