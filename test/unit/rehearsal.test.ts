import { buildSnapshot } from '../../core/policy/snapshot';
import type { RulesFile } from '../../core/policy/rules';
import { rulesFileSchema } from '../../core/policy/rules';
import { rehearseJob, summarizeByRule, type RecordedCall, type RecordedJob } from '../../core/job/rehearsal';
import type { ToolCall } from '../../core/job/preflight';

const root = '/srv/data';

function rules(list: unknown[]): ReturnType<typeof buildSnapshot> {
  const file: RulesFile = rulesFileSchema.parse({ version: 1, rules: list });
  return buildSnapshot(file, 'test', { roots: [root], judgeModel: 'judge', judgeTimeoutMs: 1000 });
}

function call(callId: string, toolName: 'fs_write' | 'fs_delete', path: string): ToolCall {
  const args = toolName === 'fs_write' ? { path: `${root}/${path}`, content: 'x' } : { path: `${root}/${path}`, recursive: false };
  return { callId, toolName, kind: 'tool', category: toolName === 'fs_write' ? 'file_change' : 'delete', args };
}

function job(batches: Array<Array<RecordedCall>>, maxApprovalRequests = 20): RecordedJob {
  return {
    jobId: 'job-1',
    scope: {},
    roots: [root],
    maxApprovalRequests,
    batches: batches.map((calls, i) => ({ runId: 'run-1', at: 1_000_000 + i * 1000, calls })),
  };
}

const allowed = (c: ToolCall): RecordedCall => ({ call: c, planned: 'run', ruleId: null, happened: 'allowed' });
const approveDeletes = { id: 'approve-deletes', version: 1, name: 'deletes', scope: { categories: ['delete'] }, action: 'request_approval' };

test('the approval budget of the job applies: a gated call beyond it is denied, as the job would deny it', () => {
  const out = rehearseJob(job([[allowed(call('c1', 'fs_delete', 'a'))], [allowed(call('c2', 'fs_delete', 'b'))]], 1), rules([approveDeletes]));
  expect(out.map((c) => [c.callId, c.after.verdict, c.after.ruleId])).toEqual([
    ['c1', 'needs approval', 'approve-deletes'],
    ['c2', 'denied', 'approve-deletes'],
  ]);
  expect(out.every((c) => c.changed)).toBe(true);
  expect(summarizeByRule(out)).toEqual([{ ruleId: 'approve-deletes', changes: 2, by: { 'allowed → needs approval': 1, 'allowed → denied': 1 } }]);
});

test('a call the reviewer denied and the model repeated is denied again by the job memory, so the same rules change nothing', () => {
  const first = call('c1', 'fs_delete', 'a');
  const repeat = { ...call('c2', 'fs_delete', 'a') };
  const out = rehearseJob(
    job([
      [{ call: first, planned: 'approval', ruleId: 'approve-deletes', happened: 'denied by reviewer' }],
      [{ call: repeat, planned: 'deny', ruleId: 'approve-deletes', happened: 'denied' }],
    ]),
    rules([approveDeletes]),
  );
  expect(out.map((c) => [c.after.verdict, c.changed])).toEqual([
    ['needs approval', false],
    ['denied', false],
  ]);
});

test('rule limits count across the batches of a job: a redirect that may fire once fires once', () => {
  const once = { id: 'once', version: 1, name: 'say it once', scope: { tools: ['fs_write'] }, action: 'inject_instruction', instruction: 'Write less.', limits: { maxFires: 1 } };
  const out = rehearseJob(job([[allowed(call('c1', 'fs_write', 'a'))], [allowed(call('c2', 'fs_write', 'b'))]]), rules([once]));
  expect(out.map((c) => [c.callId, c.after.verdict, c.changed])).toEqual([
    ['c1', 'redirected', true],
    ['c2', 'allowed', false],
  ]);
});

test('a judged rule is not asked: the call is listed with what a match would decide; a shadow one changes nothing', () => {
  const judged = (id: string, enforceJudge: boolean) => ({ id, version: 1, name: id, scope: { tools: ['fs_write'] }, condition: 'the file is a secret', enforceJudge, action: 'request_approval' });
  const [enforced] = rehearseJob(job([[allowed(call('c1', 'fs_write', 'a'))]]), rules([judged('enforced', true)]));
  expect(enforced).toMatchObject({ changed: true, after: { verdict: 'allowed', judge: [{ ruleId: 'enforced', ifMatch: 'needs approval' }] } });
  const [shadow] = rehearseJob(job([[allowed(call('c1', 'fs_write', 'a'))]]), rules([judged('shadow', false)]));
  expect(shadow).toMatchObject({ changed: false, after: { verdict: 'allowed', judge: [] } });
});

test('facts: recorded ones are used, else those read now, else none (detectors then assume the worst)', () => {
  const link = { id: 'no-links', version: 1, name: 'no links', scope: { tools: ['fs_write'] }, when: { detector: 'symlink_path' }, action: 'deny_current_tool' };
  const written = call('c1', 'fs_write', 'a');
  const path = String(written.args.path);
  const recorded: RecordedCall = { ...allowed(written), facts: { targets: [{ path, real: path, exists: true, symlink: false }] } };
  const snapshot = rules([link]);
  expect(rehearseJob(job([[recorded]]), snapshot)[0]).toMatchObject({ facts: 'recorded', after: { verdict: 'allowed' } });
  const now = new Map([['run-1/c1', { targets: [{ path, real: '/elsewhere/a', exists: true, symlink: true }] }]]);
  expect(rehearseJob(job([[allowed(written)]]), snapshot, now)[0]).toMatchObject({ facts: 'now', after: { verdict: 'denied', ruleId: 'no-links' } });
  expect(rehearseJob(job([[allowed(written)]]), snapshot)[0]).toMatchObject({ facts: 'none' });
});

test("a reviewer's denial is not a rule outcome: rules that now deny such a call outright change nothing; one that now allows it is a change", () => {
  const denyDeletes = { id: 'no-deletes', version: 1, name: 'no deletes', scope: { categories: ['delete'] }, action: 'deny_current_tool', instruction: 'Do not delete.' };
  const denied = { call: call('c1', 'fs_delete', 'a'), planned: 'approval', ruleId: 'approve-deletes', happened: 'denied by reviewer' } as const;
  const expired = { call: call('c2', 'fs_delete', 'b'), planned: 'approval', ruleId: 'approve-deletes', happened: 'expired' } as const;
  const approved = { call: call('c3', 'fs_delete', 'c'), planned: 'approval', ruleId: 'approve-deletes', happened: 'approved' } as const;
  const out = rehearseJob(job([[denied], [expired], [approved]]), rules([denyDeletes]));
  expect(out.map((c) => [c.callId, c.after.verdict, c.changed])).toEqual([
    ['c1', 'denied', false],
    ['c2', 'denied', false],
    ['c3', 'denied', true],
  ]);
  // Without any rule the denied call would run: that is a change.
  expect(rehearseJob(job([[denied]]), rules([])).map((c) => [c.after.verdict, c.changed])).toEqual([['allowed', true]]);
});
