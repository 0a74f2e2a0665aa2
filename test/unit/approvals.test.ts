import { type ApprovalRequest } from '../../core/approval/approvals';
import { checkDecision } from '../../core/approval/decision-check';
import { callFingerprint } from '../../core/approval/fingerprint';

const ctx = { jobId: 'job-1', scope: {}, now: 1_000 };
const args = { path: 'a.sh', mode: '777' };
const request: ApprovalRequest = {
  requestId: 'r1',
  callId: 'c1',
  toolName: 'fs_chmod',
  args,
  fingerprint: callFingerprint({ jobId: 'job-1', scope: {}, toolName: 'fs_chmod', normalizedArgs: args, ruleId: 'rule', ruleVersion: 1 }),
  nonce: 'ab'.repeat(16),
  ruleId: 'rule',
  ruleVersion: 1,
  reason: 'r',
  editable: ['mode'],
  reviewers: ['alice', 'bob'],
  separateRequester: true,
  signatureRequired: false,
  requester: 'bob',
  observed: [],
  createdAt: 0,
  expiresAt: 10_000,
  status: 'pending',
};
const ok = { requestId: 'r1', fingerprint: request.fingerprint, nonce: request.nonce, decision: 'approve', reviewer: 'alice' };

function code(payload: unknown, requests = [request], now = ctx.now): string {
  const result = checkDecision(requests, payload, { ...ctx, now });
  return result.ok ? 'ok' : result.code;
}

test('a matching decision is accepted', () => {
  expect(code(ok)).toBe('ok');
});

test.each([
  [{ ...ok, nonce: 'cd'.repeat(16) }, 'nonce_mismatch'],
  [{ ...ok, fingerprint: '0'.repeat(64) }, 'fingerprint_mismatch'],
  [{ ...ok, requestId: 'r2' }, 'unknown_request'],
  [{ ...ok, reviewer: 'mallory' }, 'reviewer_not_allowed'],
  [{ ...ok, reviewer: 'bob' }, 'requester_cannot_decide'],
  [{ ...ok, decision: 'maybe' }, 'invalid_payload'],
  [{ ...ok, nonce: 'short' }, 'invalid_payload'],
  [{ ...ok, extra: 1 }, 'invalid_payload'],
  [{ ...ok, decision: 'deny', args: { mode: '600' } }, 'edit_on_deny'],
  [{ ...ok, args: { path: '/etc/shadow' } }, 'edit_not_allowed'],
  [{ ...ok, args: { mode: 'rwx' } }, 'edit_invalid'],
  ['not an object', 'invalid_payload'],
])('%j is rejected as %s', (payload, expected) => {
  expect(code(payload)).toBe(expected);
});

test('decided and expired requests cannot be decided', () => {
  const approval = { decision: 'approve', reviewer: 'alice', reason: null, decidedAt: 500, editedArgs: null, editedFingerprint: null } as const;
  expect(code(ok, [{ ...request, status: 'approved', decision: approval }])).toBe('already_decided');
  expect(code(ok, [request], 10_000)).toBe('expired');
});

test('an edit inside the editable fields yields the edited call and its new fingerprint', () => {
  const result = checkDecision([request], { ...ok, args: { mode: '640' } }, ctx);
  expect(result.ok).toBe(true);
  if (!result.ok) return;
  expect(result.edit?.args).toEqual({ path: 'a.sh', mode: '640' });
  expect(result.edit?.fingerprint).toBe(
    callFingerprint({ jobId: 'job-1', scope: {}, toolName: 'fs_chmod', normalizedArgs: { path: 'a.sh', mode: '640' }, ruleId: 'rule', ruleVersion: 1 }),
  );
  // Editing a field to its current value is a plain approval.
  const same = checkDecision([request], { ...ok, args: { mode: '777' } }, ctx);
  expect(same.ok && same.edit).toBeUndefined();
});
