import { callTarget, endStatus, progressLine, type ProgressEvent } from '../../core/reviewer/progress';

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
    'job-1 completed: Removed a.tar',
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
