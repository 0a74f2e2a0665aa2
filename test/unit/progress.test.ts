import { callTarget, endExitCode, endStatus, endText, progressLine, type JobEnd, type ProgressEvent } from '../../core/reviewer/progress';
import type { GatedCall } from '../../core/job/job-facts';

const SECRET = 'sk-live0123456789abcdefXYZ';

test('one short line per event, with the job id', () => {
  const lines = (
    [
      { kind: 'started', goal: 'Tidy the\nbackups   folder' },
      { kind: 'parked', requestId: 'r1', toolName: 'fs_delete', target: '/srv/a.tar', ruleId: 'approve-deletes', reason: 'Deletion cannot be undone' },
      { kind: 'decided', requestId: 'r1', toolName: 'fs_delete', decision: 'approve', reviewer: 'owner', edited: false, reason: undefined },
      { kind: 'decided', requestId: 'r2', toolName: 'fs_write', decision: 'approve', reviewer: 'owner', edited: true, reason: 'smaller' },
      { kind: 'decided', requestId: 'r3', toolName: 'fs_delete', decision: 'deny', reviewer: 'alice', edited: false, reason: 'keep it' },
      { kind: 'expired', requestId: 'r4', toolName: 'fs_move' },
      { kind: 'executed', toolName: 'fs_delete', target: '/srv/a.tar', ok: true, detail: undefined },
      { kind: 'executed', toolName: 'fs_write', target: '/srv/b', ok: false, detail: 'disk full' },
      { kind: 'refused', toolName: 'fs_delete', target: '/srv/a.tar', reason: 'the target changed since it was approved' },
      { kind: 'ended', end: { status: 'result', result: { schemaVersion: 1, status: 'completed', summary: 'Removed a.tar', turns: 4 } } },
      { kind: 'ended', end: { status: 'result', result: { schemaVersion: 1, status: 'aborted', reason: 'policy_stopped', detail: 'rule x', turns: 2 } } },
      { kind: 'ended', end: { status: 'cancelled' } },
      { kind: 'ended', end: { status: 'terminated', reason: 'by hand' } },
      { kind: 'ended', end: { status: 'failed', message: 'boom' } },
    ] satisfies ProgressEvent[]
  ).map((e) => progressLine('job-1', e));
  expect(lines).toEqual([
    'job-1 started: Tidy the backups folder',
    'job-1 parked: fs_delete /srv/a.tar (rule approve-deletes: Deletion cannot be undone) request r1',
    'job-1 approved by owner (fs_delete, request r1)',
    'job-1 approved with edits by owner: smaller (fs_write, request r2)',
    'job-1 denied by alice: keep it (fs_delete, request r3)',
    'job-1 expired: request r4 (fs_move) was not decided in time; it counts as denied',
    'job-1 executed: fs_delete /srv/a.tar',
    'job-1 execution failed: fs_write /srv/b: disk full',
    'job-1 refused: fs_delete /srv/a.tar: the target changed since it was approved',
    'job-1 completed. The model says: “Removed a.tar”',
    'job-1 aborted (policy_stopped): rule x',
    'job-1 cancelled',
    'job-1 terminated: by hand',
    'job-1 failed: boom',
  ]);
});

test('secrets are masked and control characters escaped, whatever field holds them', () => {
  const line = progressLine(`job-${SECRET}`, {
    kind: 'parked',
    requestId: 'r1',
    toolName: 'fs_write',
    target: callTarget('fs_write', { path: `/srv/${SECRET}`, content: 'x' }),
    ruleId: 'r',
    reason: `because \u001b[31mred ${SECRET}`,
  });
  expect(line).not.toContain(SECRET);
  expect(line).not.toContain('\u001b');
  expect(line).toContain('***');
  expect(line.split('\n')).toHaveLength(1);
  expect(progressLine('job-1', { kind: 'started', goal: `x${'y'.repeat(5000)}` }).length).toBeLessThan(300);
});

test('targets are the paths a tool names; an unknown tool shows its masked arguments', () => {
  expect(callTarget('fs_move', { from: '/a', to: '/b' })).toBe('/a, /b');
  expect(callTarget('no_such_tool', { token: 'abc' })).toBe('{"token":"***"}');
  expect(endStatus({ status: 'result', result: { schemaVersion: 1, status: 'completed', turns: 1 } })).toBe('completed');
  expect(endStatus({ status: 'timed_out' })).toBe('timed_out');
});

/** A completed job whose reviewer-gated calls ended as given. */
function completedWith(gated: GatedCall[], executed = 0): JobEnd {
  return { status: 'result', result: { schemaVersion: 1, status: 'completed', summary: 'Removed old-backup.tar', turns: 3, facts: { schemaVersion: 1, executed, gated } } };
}

test("an ending leads with the job's facts, the model's summary labelled as its words; the exit code follows the facts", () => {
  const refused = completedWith([{ toolName: 'fs_delete', target: '/srv/old-backup.tar', outcome: 'refused', reviewer: 'owner', detail: 'the target changed since it was approved' }]);
  expect(endText(refused)).toBe('completed; 0 of 1 approved call ran: fs_delete /srv/old-backup.tar refused (the target changed since it was approved). The model says: “Removed old-backup.tar”');
  expect(endExitCode(refused)).toBe(3);

  const denied = completedWith([{ toolName: 'fs_delete', target: '/srv/old-backup.tar', outcome: 'denied', reviewer: 'alice', detail: 'keep it' }]);
  expect(endText(denied)).toBe('completed; 1 denied: fs_delete /srv/old-backup.tar denied by alice (keep it). The model says: “Removed old-backup.tar”');
  expect(endExitCode(denied)).toBe(3);

  const ran = completedWith([{ toolName: 'fs_delete', target: '/srv/old-backup.tar', outcome: 'executed', reviewer: 'alice' }], 2);
  expect(endText(ran)).toBe('completed; 1 of 1 approved call ran. The model says: “Removed old-backup.tar”');
  expect(endExitCode(ran)).toBe(0);

  const noneGated = completedWith([], 2);
  expect(endText(noneGated)).toBe('completed; 2 calls ran, none needed approval. The model says: “Removed old-backup.tar”');
  expect(endExitCode(noneGated)).toBe(0);

  const expired = completedWith([{ toolName: 'fs_move', target: '/a → /b', outcome: 'expired' }]);
  expect(endText(expired)).toMatch(/^completed; 1 expired: fs_move \/a → \/b expired\./);
  expect(endExitCode(expired)).toBe(3);

  expect(endExitCode({ status: 'result', result: { schemaVersion: 1, status: 'aborted', reason: 'policy_stopped', turns: 1 } })).toBe(1);
  expect(endExitCode({ status: 'cancelled' })).toBe(1);
  // A secret in the model's words or in a reviewer's reason is masked like every other line.
  expect(endText(completedWith([{ toolName: 'fs_delete', outcome: 'denied', reviewer: 'alice', detail: `no ${SECRET}` }]))).not.toContain(SECRET);
});
