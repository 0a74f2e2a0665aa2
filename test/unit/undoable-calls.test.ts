import { defaultPayloadConverter } from '@temporalio/common';
import type { temporal } from '@temporalio/proto';
import Long from 'long';
import { fromEvents } from '../../client/history/undoable-calls';

/**
 * Which of a job's calls `airlock undo` offers, from its history's events
 * (real payloads, through the SDK's default converter): changes that ran;
 * a bulk move also when it failed or was refused after moving entries
 * (whether it kept them is the tools side's to say), never one that says
 * it moved nothing.
 */
type Event = temporal.api.history.v1.IHistoryEvent;
const payloads = (value: unknown) => ({ payloads: [defaultPayloadConverter.toPayload(value)] });
const decode = async (p: temporal.api.common.v1.IPayloads | null | undefined) => (p?.payloads?.[0] === undefined ? undefined : defaultPayloadConverter.fromPayload(p.payloads[0]));
const moves = [
  { from: '/srv/in/a', to: '/srv/out/a' },
  { from: '/srv/in/b', to: '/srv/out/b' },
];

function execute(id: number, toolName: string, args: Record<string, unknown>): Event {
  return { eventId: Long.fromNumber(id), activityTaskScheduledEventAttributes: { activityType: { name: 'execute' }, input: payloads({ jobId: 'job-1', callId: `call-${id}`, toolName, args, approved: { reviewer: 'alice', reversible: true } }) } };
}
const completed = (id: number, scheduled: number, result: Record<string, unknown>): Event => ({ eventId: Long.fromNumber(id), activityTaskCompletedEventAttributes: { scheduledEventId: Long.fromNumber(scheduled), result: payloads(result) } });
const failed = (id: number, scheduled: number, message: string): Event => ({ eventId: Long.fromNumber(id), activityTaskFailedEventAttributes: { scheduledEventId: Long.fromNumber(scheduled), failure: { message } } });

test('a bulk move that ran, stopped part way, failed after a kill, or was refused after moving entries is offered; one that moved nothing is not', async () => {
  const calls = await fromEvents(
    [
      execute(1, 'fs_move_many', { moves }),
      completed(2, 1, { ok: true, output: 'moved 2 of 2 entries (kept for undo: airlock undo moves them back)' }),
      execute(3, 'fs_move_many', { moves }),
      failed(4, 3, 'execute refused: the grant has expired'),
      execute(5, 'fs_move_many', { moves }),
      completed(6, 5, { ok: false, output: 'Refused: 1 of 2 entries had moved before an interruption, and no more were moved: …' }),
      execute(7, 'fs_move_many', { moves }),
      completed(8, 7, { ok: false, output: 'Refused: nothing was moved: entry 1: /srv/in/a does not exist' }),
      execute(9, 'fs_move_many', { moves }),
      completed(10, 9, { ok: false, output: 'moved 0 of 2 entries\nstopped at …' }),
      execute(11, 'fs_move_many', { moves }),
      completed(12, 11, { ok: false, output: '', refused: 'the target changed since it was approved' }),
      execute(13, 'fs_delete', { path: '/srv/in/c' }),
      failed(14, 13, 'execute refused: the grant has expired'),
      execute(15, 'fs_move_many', { moves }),
      completed(16, 15, { ok: false, output: 'Error: ENOSPC: no space left on device, write' }),
      execute(17, 'fs_move_many', { moves }),
      { eventId: Long.fromNumber(18), activityTaskTimedOutEventAttributes: { scheduledEventId: Long.fromNumber(17), failure: { message: 'activity Heartbeat timeout' } } },
      execute(19, 'fs_move_many', { moves }),
      completed(20, 19, { ok: false, output: 'Refused: the approved change was to be reversible, but /srv/in is not set up for undo; nothing was changed' }),
    ],
    decode,
  );
  expect(calls.map((c) => c.callId)).toEqual(['call-1', 'call-3', 'call-5', 'call-15', 'call-17']);
  expect(calls[1]).toMatchObject({ toolName: 'fs_move_many', path: '/srv/in/a', moves, approvedBy: 'alice', promised: true, output: 'execute refused: the grant has expired' });
});
