import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { restoreCarriedState } from '../../core/job/carried-state';

/** The state a job carried when it continued as new while parked, as recorded in its second run's input by builds before the baseline (kept as fixtures: v0 carried version 1, v1 version 2, v3 version 3). */
function recordedState(tag = 'v0'): Record<string, unknown> {
  const file = join(__dirname, '..', 'fixtures', 'carried-state', `continue-as-new-parked.${tag}.run2.json`);
  const history = JSON.parse(readFileSync(file, 'utf8')) as {
    events: Array<{ workflowExecutionStartedEventAttributes?: { input: { payloads: Array<{ data: string }> } } }>;
  };
  const payload = history.events[0]?.workflowExecutionStartedEventAttributes?.input.payloads[0];
  if (payload === undefined) throw new Error(`${file} has no start input`);
  const input = JSON.parse(Buffer.from(payload.data, 'base64').toString('utf8')) as { carried: Record<string, unknown> };
  return input.carried;
}

test('a version-1 payload (a parked job that continued as new) restores as the current version', () => {
  const v1 = recordedState();
  expect(v1.schemaVersion).toBe(1);
  const restored = restoreCarriedState(v1);
  if (!restored.ok) throw new Error(restored.message);
  const { state } = restored;
  expect(state.schemaVersion).toBe(3);
  expect(state.turns).toBe(v1.turns);
  // Nothing of the conversation is stored yet: it all waits for the next model turn.
  expect(state.conversation).toEqual({ head: null, length: (v1.messages as unknown[]).length, pending: v1.messages, recent: [] });
  expect(state.snapshot).toEqual(v1.snapshot);
  const parked = state.parked;
  expect(parked).not.toBeNull();
  expect(parked?.prepareFailures).toEqual([]);
  // The parked delete is still pending, with no decision, bound to the same fingerprint and nonce.
  const [request] = parked?.requests ?? [];
  const [v1Request] = (v1.parked as { requests: Array<Record<string, unknown>> }).requests;
  expect(request).toMatchObject({ status: 'pending', fingerprint: v1Request?.fingerprint, nonce: v1Request?.nonce, toolName: 'fs_delete' });
  expect(request).not.toHaveProperty('decision');
  expect(parked?.plan.calls.map((p) => p.kind)).toEqual(['approval']);
  expect(parked?.plan.calls[0]).toMatchObject({ kind: 'approval', call: { kind: 'tool', toolName: 'fs_delete' }, fingerprint: v1Request?.fingerprint });
});

test('decided version-1 requests keep their decision; a decision that contradicts the status is refused', () => {
  const v1 = recordedState();
  const parked = v1.parked as { requests: Array<Record<string, unknown>> };
  const [pending] = parked.requests;
  const approved = { ...pending, status: 'approved', decision: { decision: 'approve', reviewer: 'alice', reason: null, decidedAt: 1, editedArgs: null, editedFingerprint: null } };
  const denied = { ...pending, requestId: 'r2', status: 'denied', decision: { decision: 'deny', reviewer: 'bob', reason: 'no', decidedAt: 2, editedArgs: null, editedFingerprint: null } };
  const restored = restoreCarriedState({ ...v1, decided: [approved, denied] });
  if (!restored.ok) throw new Error(restored.message);
  expect(restored.state.decided).toEqual([
    expect.objectContaining({ status: 'approved', decision: { decision: 'approve', reviewer: 'alice', reason: null, decidedAt: 1, editedArgs: null, editedFingerprint: null } }),
    expect.objectContaining({ status: 'denied', decision: { decision: 'deny', reviewer: 'bob', reason: 'no', decidedAt: 2 } }),
  ]);
  const contradiction = restoreCarriedState({ ...v1, decided: [{ ...approved, decision: null }] });
  expect(contradiction).toEqual({ ok: false, message: expect.stringContaining('approved without an approval') });
});

test('unknown, newer or malformed state is refused with a reason, never guessed at', () => {
  const v1 = recordedState();
  expect(restoreCarriedState({ ...v1, schemaVersion: 4 })).toEqual({ ok: false, message: expect.stringContaining('newer build') });
  expect(restoreCarriedState({ turns: 1 })).toEqual({ ok: false, message: 'carried state without a schemaVersion' });
  expect(restoreCarriedState({ ...v1, turns: 'many' })).toEqual({ ok: false, message: expect.stringMatching(/^version 1 state: turns: /) });
  const restored = restoreCarriedState(v1);
  if (!restored.ok) throw new Error(restored.message);
  // The current version reads itself back.
  expect(restoreCarriedState(JSON.parse(JSON.stringify(restored.state)))).toEqual(restored);
});

test('a version-2 payload (the whole conversation inline) restores with its conversation pending', () => {
  const v2 = recordedState('v1');
  expect(v2.schemaVersion).toBe(2);
  const restored = restoreCarriedState(v2);
  if (!restored.ok) throw new Error(restored.message);
  expect(restored.state.schemaVersion).toBe(3);
  expect(restored.state.conversation.pending).toEqual(v2.messages);
  expect(restored.state.conversation.head).toBeNull();
  expect(restored.state.parked?.requests[0]?.status).toBe('pending');
});

test('current state restores with and without the optional audit backlog', () => {
  const v3 = recordedState('v3');
  expect(v3.schemaVersion).toBe(3);
  expect(restoreCarriedState(v3).ok).toBe(true);
  const audit = { events: [{ type: 'runtime_error', jobId: 'j', at: '2026-01-01T00:00:00.000Z', data: { code: 'model_error', error: 'x' } }], dropped: 2, failures: 3, lastError: 'ENOSPC' };
  const restored = restoreCarriedState({ ...v3, audit });
  expect(restored.ok && restored.state.audit).toEqual(audit);
  expect(restoreCarriedState({ ...v3, audit: { events: [], dropped: 0 } }).ok).toBe(false);
});
