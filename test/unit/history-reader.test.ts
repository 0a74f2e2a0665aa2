import { Client } from '@temporalio/client';
import { defaultPayloadConverter } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { PENDING_MEMO_KEY } from '../../core/reviewer/pending-memo';
import { progressLine, type ProgressEvent } from '../../core/reviewer/progress';
import { HistoryReader } from '../../client/history/progress-reader';

const EventType = temporal.api.enums.v1.EventType;
const T0 = Date.parse('2026-01-01T00:00:00Z');
const EXPIRES = T0 + 60_000;

const payloads = (value: unknown) => ({ payloads: [defaultPayloadConverter.toPayload(value)] });
const at = (ms: number) => ({ seconds: Math.floor(ms / 1000), nanos: (ms % 1000) * 1e6 });

const request = {
  requestId: 'r1',
  callId: 'c1',
  toolName: 'fs_delete',
  args: { path: '/srv/old.tar' },
  ruleId: 'approve-deletes',
  ruleVersion: 1,
  reason: 'Deleting needs approval',
  fingerprint: 'f'.repeat(64),
  nonce: 'n'.repeat(32),
  observed: [],
  editable: [],
  reviewers: null,
  requester: 'owner',
  createdAt: new Date(T0).toISOString(),
  expiresAt: new Date(EXPIRES).toISOString(),
};

function memo(requests: unknown[], ms: number): EventObject {
  return {
    eventTime: at(ms),
    eventType: EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED,
    workflowPropertiesModifiedEventAttributes: {
      upsertedMemo: { fields: { [PENDING_MEMO_KEY]: defaultPayloadConverter.toPayload({ v: 1, goal: 'g', requests }) } },
    },
  };
}

function signal(decision: Record<string, unknown>, ms: number): EventObject {
  return {
    eventTime: at(ms),
    eventType: EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED,
    workflowExecutionSignaledEventAttributes: { signalName: 'approvalDecision', input: payloads(decision) },
  };
}

/** An event as JSON would spell it (numbers for int64 fields). */
type EventObject = Record<string, unknown>;

async function read(events: EventObject[]): Promise<ProgressEvent[]> {
  const reader = new HistoryReader(new Client({ namespace: 'default' }));
  const out: ProgressEvent[] = [];
  for (const e of events) out.push(...(await reader.read(temporal.api.history.v1.HistoryEvent.fromObject(e))).events);
  return out;
}

const decision = { requestId: 'r1', fingerprint: 'f'.repeat(64), nonce: 'n'.repeat(32), decision: 'approve', reviewer: 'mallory' };

test('a request gone before its expiry was decided, by the last decision sent', async () => {
  const events = await read([
    memo([request], T0),
    signal(decision, T0 + 1000),
    signal({ ...decision, decision: 'deny', reviewer: 'owner', reason: 'no' }, T0 + 2000),
    memo([], T0 + 2000),
  ]);
  expect(events.map((e) => e.kind)).toEqual(['parked', 'decided']);
  expect(events[1]).toMatchObject({ decision: 'deny', reviewer: 'owner', reason: 'no' });
});

test('a decision the job rejected does not turn an expiry into an approval', async () => {
  // A decision was sent (and rejected by the job: wrong key, say); the request then expired.
  const events = await read([memo([request], T0), signal(decision, T0 + 1000), memo([], EXPIRES + 5)]);
  expect(events.map((e) => e.kind)).toEqual(['parked', 'expired']);
  expect(JSON.stringify(events)).not.toContain('mallory');
});

test('a request gone after an operator withdrew what the job waits for is withdrawn, not expired; its line says by whom and why', async () => {
  const withdraw = {
    eventTime: at(T0 + 1000),
    eventType: EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED,
    workflowExecutionUpdateAcceptedEventAttributes: { acceptedRequest: { input: { name: 'withdrawRequests', args: payloads({ by: 'carol', reason: "withdrawn: agent desk's token was revoked" }) } } },
  };
  const events = await read([memo([request], T0), withdraw, memo([], T0 + 1000)]);
  expect(events.map((e) => e.kind)).toEqual(['parked', 'withdrawn']);
  expect(progressLine('job-1', events[1] ?? { kind: 'started', goal: '' })).toBe("job-1 withdrawn by carol: withdrawn: agent desk's token was revoked (fs_delete, request r1); not run");
});

test('the start, an execution and the end', async () => {
  const events = await read([
    { eventType: EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED, workflowExecutionStartedEventAttributes: { input: payloads({ schemaVersion: 1, goal: 'tidy', requester: 'owner' }) } },
    { eventId: 5, eventType: EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED, activityTaskScheduledEventAttributes: { activityType: { name: 'execute' }, input: payloads({ toolName: 'fs_delete', args: { path: '/srv/old.tar' } }) } },
    { eventType: EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED, activityTaskCompletedEventAttributes: { scheduledEventId: 5, result: payloads({ ok: false, output: 'permission denied', replayed: false }) } },
    { eventType: EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED, workflowExecutionCanceledEventAttributes: {} },
  ]);
  expect(events).toEqual([
    { kind: 'started', goal: 'tidy' },
    { kind: 'executed', toolName: 'fs_delete', target: '/srv/old.tar', ok: false, detail: 'permission denied' },
    { kind: 'ended', end: { status: 'cancelled' } },
  ]);
});
