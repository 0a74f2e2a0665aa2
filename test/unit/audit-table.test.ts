import { auditTable } from '../../core/audit/audit-table';

const at = '2026-12-02T16:44:05.000Z';
const base = { jobId: 'job-1', at, runId: '0f3c9a2e-1111-2222-3333-444455556666' };

test('one row per event: time in the given zone, the run, the job, the event, tool, target, who and what became of it', () => {
  const lines = auditTable(
    [
      { ...base, type: 'approval_requested', data: { requestId: 'r1', callId: 'c1', toolName: 'fs_delete', ruleId: 'approve-deletes', ruleVersion: 1, fingerprint: 'f', requester: 'bob', argsSummary: '{"path":"/srv/a.tar"}', expiresAt: '2026-12-03T16:44:05.000Z', target: '/srv/a.tar', reason: 'x'.repeat(5000) } },
      { ...base, type: 'approval_decided', data: { requestId: 'r1', toolName: 'fs_delete', ruleId: 'approve-deletes', decision: 'deny', reviewer: 'alice', reason: 'keep it', originalFingerprint: 'f', signed: true, via: 'update', target: '/srv/a.tar' } },
      { ...base, type: 'job_ended', data: { status: 'completed', facts: '1 denied: fs_delete /srv/a.tar denied by alice (keep it)', summary: 'Removed a.tar' } },
      // A type this build does not know still gets its row, without an outcome.
      { ...base, runId: undefined, type: 'from_a_newer_build', data: { toolName: 'x' } },
    ],
    (t) => t,
    'UTC',
  );
  expect(lines[0]).toMatch(/^TIME +RUN +JOB +EVENT +TOOL +TARGET +WHO +OUTCOME$/);
  expect(lines[1]).toMatch(/^2026-12-02 16:44:05 {2}0f3c9a2e {2}job-1 {2}approval_requested +fs_delete {2}\/srv\/a\.tar +bob +waits for approval \(rule approve-deletes/);
  expect(lines[2]).toMatch(/approval_decided +fs_delete +\/srv\/a\.tar +alice +denied: keep it$/);
  expect(lines[3]).toMatch(/job_ended +completed; 1 denied: fs_delete \/srv\/a\.tar denied by alice \(keep it\)$/);
  expect(lines[4]).toMatch(/^2026-12-02 16:44:05 +job-1 {2}from_a_newer_build +x$/);
  // Long texts (the card, the rule's reason) stay in --json: a row is one line of bounded width.
  expect(lines.join('\n')).not.toContain('xxxx');
  for (const line of lines) expect(line.length).toBeLessThan(400);
  expect(auditTable([{ ...base, type: 'job_cancelled', data: { turn: 2 } }], (t) => t, 'Asia/Tokyo')[1]).toMatch(/^2026-12-03 01:44:05 .* job_cancelled +cancelled$/);
});
