import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import type { temporal } from '@temporalio/proto';
import { z } from 'zod';
import { readJob } from '../../client/history/job-history';
import type { RunHistory } from '../../client/history/runs';
import { SubmittedCalls, type TakenCall } from '../../client/history/submitted-calls';
import { changeLabel, rehearseJob, type RecordedJob } from '../../core/job/rehearsal';
import { policySnapshotSchema, type PolicySnapshot } from '../../core/policy/snapshot';

/**
 * The rehearsal's reader on the recorded client-driven jobs: their calls come
 * from the accepted `submitCall` updates, each decided by the plan that
 * took it, in the order taken; retries that attached are no calls.
 */

type HistoryEvent = temporal.api.history.v1.IHistoryEvent;

const file = 'client-driven.base.json';
const events: HistoryEvent[] = historyFromJSON(JSON.parse(readFileSync(join(__dirname, '..', 'replay', 'histories', file), 'utf8'))).events ?? [];

const decode = async (payloads: Parameters<typeof defaultPayloadConverter.fromPayload>[0][]): Promise<unknown> =>
  payloads[0] === undefined ? undefined : defaultPayloadConverter.fromPayload(payloads[0]);

async function read(runs: RunHistory[]): Promise<RecordedJob> {
  const { job, skipped } = await readJob('client-driven', runs, decode);
  expect(skipped).toEqual([]);
  if (job === undefined) throw new Error('no job');
  return job;
}

const submitted = (e: HistoryEvent) => e.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input?.name === 'submitCall';

/** The job's own snapshot (its first local activity's result). */
async function ownSnapshot(): Promise<PolicySnapshot> {
  const marker = events.find((e) => e.markerRecordedEventAttributes != null)?.markerRecordedEventAttributes;
  return z.looseObject({ snapshot: policySnapshotSchema }).parse(await decode(marker?.details?.result?.payloads ?? [])).snapshot;
}

test('one batch per call taken, in order: the call as the gate saw it, what it decided then, and what became of it', async () => {
  expect(events.filter(submitted)).toHaveLength(5);
  const job = await read([{ runId: file, events }]);
  expect(job.scope).toBeDefined();
  expect(job.roots).toHaveLength(1);
  const calls = job.batches.map((b) => b.calls.map((c) => ({ callId: c.call.callId, toolName: c.call.toolName, planned: c.planned, ruleId: c.ruleId, happened: c.happened })));
  expect(calls).toEqual([
    [{ callId: 'call-read-1', toolName: 'fs_stat', planned: 'run', ruleId: null, happened: 'allowed' }],
    [{ callId: 'call-delete-1', toolName: 'fs_delete', planned: 'approval', ruleId: 'approve-deletes', happened: 'approved' }],
    [{ callId: 'call-read-2', toolName: 'fs_list', planned: 'run', ruleId: null, happened: 'allowed' }],
  ]);
  // The arguments the gate evaluated (canonical: absolute paths under the job's root), not the client's.
  const root = job.roots?.[0] ?? '';
  expect(job.batches[1]?.calls[0]?.call.args).toEqual({ path: `${root}/client.bak`, recursive: false });
  // The delete's targets were resolved for its rule; the reads' were not asked for.
  expect(job.batches[1]?.calls[0]?.facts).toBeDefined();
  expect(job.batches[0]?.calls[0]?.facts).toBeUndefined();
  const at = job.batches.map((b) => b.at);
  expect([...at].sort((a, b) => a - b)).toEqual(at);
  expect(job.batches.every((b) => b.runId === file)).toBe(true);
});

test('an accepted call recorded twice (a retry under another update id) is one call', async () => {
  const twice = events.flatMap((e) => (submitted(e) ? [e, e] : [e]));
  expect(twice.filter(submitted)).toHaveLength(10);
  const job = await read([{ runId: file, events: twice }]);
  expect(job.batches.map((b) => b.calls.map((c) => `${c.call.callId} ${c.happened}`))).toEqual([['call-read-1 allowed'], ['call-delete-1 approved'], ['call-read-2 allowed']]);
});

test('a call accepted but never taken (the run ended first) is no call: its client sends it again', async () => {
  // The history up to the third accepted call (the read while the delete waited), before the gate took it.
  const third = events.filter(submitted)[2];
  const cut = third === undefined ? -1 : events.indexOf(third);
  expect(cut).toBeGreaterThan(0);
  const job = await read([{ runId: file, events: events.slice(0, cut + 1) }]);
  expect(job.batches.map((b) => b.calls.map((c) => `${c.call.callId} ${c.happened}`))).toEqual([['call-read-1 allowed'], ['call-delete-1 pending']]);
});

test('rehearsed under other rules: a client job shows what would change, as a model job does', async () => {
  const job = await read([{ runId: file, events }]);
  const own = await ownSnapshot();
  expect(rehearseJob(job, own).filter((c) => c.changed)).toEqual([]);
  const withoutApprovals = { ...own, rules: own.rules.filter((r) => r.id !== 'approve-deletes') };
  const changed = rehearseJob(job, withoutApprovals).filter((c) => c.changed);
  expect(changed.map((c) => `${c.callId} ${c.toolName} ${changeLabel(c)}`)).toEqual(['call-delete-1 fs_delete approved → allowed']);
});

test('a request that expires while the client goes on: expired at the first task after its time, not before; a gated call meanwhile never became a request', async () => {
  const expiredFile = 'client-expired.base.json';
  const all: HistoryEvent[] = historyFromJSON(JSON.parse(readFileSync(join(__dirname, '..', 'replay', 'histories', expiredFile), 'utf8'))).events ?? [];
  const whole = await read([{ runId: expiredFile, events: all }]);
  const calls = whole.batches.map((b) => b.calls.map((c) => ({ callId: c.call.callId, planned: c.planned, ruleId: c.ruleId, happened: c.happened })));
  expect(calls).toEqual([
    [{ callId: 'call-quick-1', planned: 'approval', ruleId: 'quick-deletes', happened: 'expired' }],
    [{ callId: 'call-later-1', planned: 'approval', ruleId: 'approve-deletes', happened: 'undecided' }],
    [{ callId: 'call-read-1', planned: 'run', ruleId: null, happened: 'allowed' }],
  ]);
  // Up to the timer that ends its wait, the request still waits.
  const fired = all.findIndex((e) => e.timerFiredEventAttributes != null);
  expect(fired).toBeGreaterThan(0);
  const before = await read([{ runId: expiredFile, events: all.slice(0, fired + 1) }]);
  expect(before.batches.map((b) => b.calls.map((c) => `${c.call.callId} ${c.happened}`))).toEqual([['call-quick-1 pending'], ['call-later-1 undecided']]);
});

describe('the workflow’s rules for a call sent again', () => {
  const del = (callKey: string) => ({ callKey, toolName: 'fs_delete', args: { path: 'client.bak' } });

  test('a key already taken is answered from the job’s state, in this run or a later one: a plan evaluating it again (an edit) takes nothing', () => {
    const taken = new Map<string, TakenCall>();
    const first = new SubmittedCalls(taken);
    first.accept(del('call-delete-1'), () => false);
    expect([...first.take(['call-delete-1'])]).toEqual(['call-delete-1']);
    first.accept(del('call-delete-1'), () => true);
    expect([...first.take(['call-delete-1'])]).toEqual([]);
    const next = new SubmittedCalls(taken);
    next.accept(del('call-delete-1'), () => false);
    expect([...next.take(['call-delete-1'])]).toEqual([]);
  });

  test('the same tool and arguments under a new key attach while that call waits for a reviewer, and are a new call once it does not', () => {
    const waiting = new SubmittedCalls(new Map<string, TakenCall>());
    waiting.accept(del('call-delete-1'), () => false);
    waiting.take(['call-delete-1']);
    waiting.accept(del('call-delete-1-retry'), (key) => key === 'call-delete-1');
    expect([...waiting.take(['call-delete-1-retry'])]).toEqual([]);
    waiting.accept(del('call-delete-2'), () => false);
    expect([...waiting.take(['call-delete-2'])]).toEqual(['call-delete-2']);
  });

  test('an input the workflow would refuse is no call', () => {
    const calls = new SubmittedCalls(new Map<string, TakenCall>());
    calls.accept({ callKey: 'x', toolName: 'fs_delete', args: {} }, () => false);
    expect([...calls.take(['x'])]).toEqual([]);
  });
});
