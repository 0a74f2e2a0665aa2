import { checkDecision, decisionSigningText } from '../../core/approval/decision-check';
import type { PendingRequest } from '../../core/approval/approvals';
import { fixedArgs, mergeStanding, requestScope, scopeDifference, standingAskProblem, standingOffer, type StandingSettings } from '../../core/approval/standing';
import { canonicalJson } from '../../core/util/canonical-json';

const DAY = 86_400_000;
const settings: StandingSettings = { maxForMs: 30 * DAY, maxUses: 5, varies: ['content'], rules: [{ id: 'r', version: 1 }] };
const file = (path: string, ino = 7) => ({ path, exists: true as const, type: 'file' as const, size: 1, mtimeMs: 1, mode: '644', dev: 1, ino, sha256: null, entries: null });

const request = (fields: Partial<PendingRequest> = {}): PendingRequest => ({
  requestId: 'req-1',
  callId: 'call-1',
  toolName: 'fs_write',
  args: { path: '/srv/logs/app.log', content: 'a', mode: 'append' },
  fingerprint: 'a'.repeat(64),
  nonce: 'b'.repeat(32),
  ruleId: 'r',
  ruleVersion: 1,
  reason: 'x',
  editable: [],
  reviewers: null,
  separateRequester: false,
  signatureRequired: false,
  requester: 'nightly',
  observed: [file('/srv/logs/app.log')],
  createdAt: 0,
  expiresAt: Date.now() + DAY,
  status: 'pending',
  standing: settings,
  ...fields,
});

describe('what a standing approval covers', () => {
  const covered = requestScope(request(), {}, settings);

  test('the same operation with other free fields, or its target spelled through a link, is the same', () => {
    expect(scopeDifference(covered, requestScope(request({ args: { path: '/srv/logs/app.log', content: 'other', mode: 'append' } }), {}, settings))).toBeUndefined();
    // The path is compared by the place observed, not by its spelling.
    expect(scopeDifference(covered, requestScope(request({ args: { path: '/srv/alias/app.log', content: 'b', mode: 'append' } }), {}, settings))).toBeUndefined();
  });

  test('another target, tool, requester, argument, rule version, piece or machine is not', () => {
    const differs = (r: PendingRequest, scope = {}, s = settings) => scopeDifference(covered, requestScope(r, scope, s));
    expect(differs(request({ observed: [file('/srv/logs/app.log.1')] }))).toBe('another target (by its real place)');
    expect(differs(request({ toolName: 'fs_delete' }))).toMatch(/another tool/);
    expect(differs(request({ requester: 'mallory' }))).toMatch(/another requester/);
    expect(differs(request({ args: { path: '/srv/logs/app.log', content: 'a', mode: 'overwrite' } }))).toBe('other arguments');
    expect(differs(request(), {}, { ...settings, rules: [{ id: 'r', version: 2 }] })).toMatch(/rule versions/);
    expect(differs(request(), { piece: 'p' })).toMatch(/piece/);
    expect(differs(request({ machine: 'nas' }))).toMatch(/another machine/);
    expect(differs(request(), {}, { ...settings, varies: [] })).toMatch(/other fields vary/);
  });

  test('only one file target is compared by place: a command, a bulk move or a service keeps its arguments and the very instance', () => {
    const subject = (text: string, identity: string | null) => ({ kind: 'subject' as const, subject: text, exists: true, identity, summary: text, facts: {} });
    const command = (argv: string[], identity = 'ino:5') =>
      requestScope(request({ toolName: 'command_run', args: { argv: ['git', ...argv], cwd: '/srv/repo' }, observed: [subject('git', identity)] }), {}, { ...settings, varies: [] });
    expect(scopeDifference(command(['status']), command(['push', '--force']))).toBe('other arguments');
    expect(scopeDifference(command(['status']), command(['status'], 'ino:6'))).toBe('another target (by its real place)');
    const moves = (to: string) =>
      requestScope(request({ toolName: 'fs_move_many', args: { moves: [{ from: '/srv/a', to }] }, observed: [subject('1 move', null)] }), {}, { ...settings, varies: [] });
    expect(scopeDifference(moves('/srv/b'), moves('/srv/c'))).toBe('other arguments');
    const service = (identity: string) => ({ kind: 'service' as const, service: 'jellyfin', adapter: 'docker', exists: true, identity, running: true, health: 'healthy' as const, status: 'up', facts: {} });
    const restart = (identity: string) => requestScope(request({ toolName: 'service_restart', args: { service: 'jellyfin' }, observed: [service(identity)] }), {}, { ...settings, varies: [] });
    expect(scopeDifference(restart('c1'), restart('c1'))).toBeUndefined();
    expect(scopeDifference(restart('c1'), restart('c2'))).toBe('another target (by its real place)');
  });

  test('what the card said is part of it: another reason or warning, or undo, is another operation', () => {
    expect(scopeDifference(covered, requestScope(request({ reason: 'x — the file has 2 names' }), {}, settings))).toMatch(/card would say something else/);
    expect(scopeDifference(covered, requestScope(request({ undo: { reversible: true, keepDays: 7 } }), {}, settings))).toMatch(/can be undone now/);
  });

  test('a tool whose targets were not observed one by one keeps them as spelled', () => {
    const unobserved = requestScope(request({ observed: [] }), {}, settings);
    expect(unobserved.args).toEqual({ path: '/srv/logs/app.log', mode: 'append' });
    expect(fixedArgs({ a: 1, o: { m: 1, k: 2 } }, ['o.m'])).toEqual({ a: 1, o: { k: 2 } });
  });

  test('the rules bound it: every gating rule must allow one, the tightest bound wins, varies only what all let vary', () => {
    expect(mergeStanding([{ id: 'a', version: 1, standing: { maxForMs: DAY, maxUses: 9, varies: ['content', 'x'] } }, { id: 'b', version: 2, standing: { maxForMs: 7 * DAY, maxUses: 3, varies: ['content'] } }])).toEqual({
      maxForMs: DAY,
      maxUses: 3,
      varies: ['content'],
      rules: [
        { id: 'a', version: 1 },
        { id: 'b', version: 2 },
      ],
    });
    expect(mergeStanding([{ id: 'a', version: 1, standing: { maxForMs: DAY, maxUses: 9, varies: [] } }, { id: 'b', version: 1, standing: undefined }])).toBeUndefined();
    expect(mergeStanding([])).toBeUndefined();
    const now = 1_000_000;
    expect(standingAskProblem(undefined, { until: now + 1, uses: 1 }, now)).toMatch(/allow no standing approval/);
    expect(standingAskProblem(settings, { until: now + 31 * DAY, uses: 1 }, now)).toMatch(/at most 30d/);
    expect(standingAskProblem(settings, { until: now + DAY, uses: 6 }, now)).toMatch(/at most 5 uses/);
    expect(standingAskProblem(settings, { until: now, uses: 1 }, now)).toMatch(/future/);
    expect(standingAskProblem(settings, { until: now + 30 * DAY, uses: 5 }, now)).toBeUndefined();
    expect(standingOffer(request())).toContain('with the same arguments but content');
  });
});

describe('asking for one in a decision', () => {
  const base = { requestId: 'req-1', fingerprint: 'a'.repeat(64), nonce: 'b'.repeat(32), decision: 'approve' as const, reviewer: 'alice' };
  const ctx = { jobId: 'job-1', scope: {}, now: Date.now() };

  test('the signed text is what it always was without one, and binds its end and uses with one', () => {
    expect(decisionSigningText('job-1', base)).toBe(canonicalJson({ purpose: 'airlock-decision', jobId: 'job-1', requestId: 'req-1', fingerprint: base.fingerprint, nonce: base.nonce, decision: 'approve', args: null, reviewer: 'alice', reason: null }));
    const one = decisionSigningText('job-1', { ...base, standing: { until: 5, uses: 1 } });
    expect(one).not.toBe(decisionSigningText('job-1', { ...base, standing: { until: 5, uses: 2 } }));
    expect(one).not.toBe(decisionSigningText('job-1', { ...base, standing: { until: 6, uses: 1 } }));
  });

  test('only a signed approval of the call as proposed, within the rules', () => {
    const until = Date.now() + DAY;
    const signed = { signature: 'c2ln' };
    expect(checkDecision([request()], { ...base, standing: { until, uses: 1 } }, ctx)).toMatchObject({ ok: false, code: 'standing_unsigned' });
    expect(checkDecision([request()], { ...base, ...signed, standing: { until, uses: 1 } }, ctx)).toMatchObject({ ok: true });
    expect(checkDecision([request({ standing: undefined })], { ...base, ...signed, standing: { until, uses: 1 } }, ctx)).toMatchObject({ ok: false, code: 'standing_not_allowed' });
    expect(checkDecision([request()], { ...base, ...signed, decision: 'deny', standing: { until, uses: 1 } }, ctx)).toMatchObject({ ok: false, code: 'standing_not_allowed' });
    expect(checkDecision([request({ editable: ['content'] })], { ...base, ...signed, args: { content: 'b' }, standing: { until, uses: 1 } }, ctx)).toMatchObject({ ok: false, code: 'standing_not_allowed' });
    expect(checkDecision([request()], { ...base, ...signed, standing: { until, uses: 6 } }, ctx)).toMatchObject({ ok: false, code: 'standing_not_allowed' });
    expect(checkDecision([request()], { ...base, ...signed, standing: { until, uses: 0 } }, ctx)).toMatchObject({ ok: false, code: 'invalid_payload' });
  });
});
