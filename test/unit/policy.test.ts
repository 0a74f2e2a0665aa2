import { parseRulesDocument, RulesFileError } from '../../host/config/rules-file';
import { planBatch } from '../../core/job/batch-plan';
import { preflight } from '../../core/job/preflight';
import { conditionMatches } from '../../core/policy/conditions';
import { evaluateCall } from '../../core/policy/evaluate';
import { batchOutcome, recordFires } from '../../core/policy/rule-fires';
import { type CallContext } from '../../core/policy/call-evaluation';
import type { Condition, RuleInput } from '../../core/policy/rules';
import { buildSnapshot } from '../../core/policy/snapshot';
import { defaultRules } from '../../core/policy/default-rules';
import { mergeApprovalSettings } from '../../core/policy/approval-settings';

function snapshot(rules: RuleInput[], instructions: string[] = []) {
  return buildSnapshot(parseRulesDocument({ version: 1, instructions, rules }, 'test'), 'test');
}

const call = (toolName: string, category: CallContext['category'], args: Record<string, unknown>): CallContext => ({
  toolName,
  category,
  args,
  scope: {},
});

describe('conditions', () => {
  const args = { path: '/srv/media/日本語/film.mkv', size: 10, recursive: true, options: { mode: '640' } };
  test.each<[Condition, boolean]>([
    [{ arg: 'recursive', equals: true }, true],
    [{ arg: 'recursive', equals: 'true' }, false],
    [{ arg: 'options.mode', in: ['600', '640'] }, true],
    [{ arg: 'path', glob: '/srv/media/**/*.mkv' }, true],
    [{ arg: 'path', glob: '/srv/media/*.mkv' }, false],
    [{ arg: 'path', glob: '**/日本語/*' }, true],
    [{ arg: 'path', regex: '\\.mkv$' }, true],
    [{ arg: 'size', lt: 11 }, true],
    [{ arg: 'size', lte: 9 }, false],
    [{ arg: 'size', gt: 9 }, true],
    [{ arg: 'size', gte: 11 }, false],
    [{ arg: 'path', lt: 5 }, false],
    [{ arg: 'missing', exists: false }, true],
    [{ arg: 'missing', equals: null }, false],
    [{ all: [{ arg: 'recursive', equals: true }, { arg: 'size', gt: 5 }] }, true],
    [{ any: [{ arg: 'recursive', equals: false }, { arg: 'size', gt: 50 }] }, false],
    [{ not: { arg: 'path', glob: '**/*.tmp' } }, true],
  ])('%j → %s', (condition, expected) => {
    expect(conditionMatches(condition, args)).toBe(expected);
  });
});

describe('evaluation', () => {
  const rules: RuleInput[] = [
    { id: 'audit-all', version: 1, name: 'audit', action: 'audit_only' },
    { id: 'gate-delete', version: 2, name: 'gate', scope: { categories: ['delete'] }, action: 'request_approval' },
    { id: 'no-root', version: 1, name: 'deny', scope: { tools: ['fs_delete'] }, when: { arg: 'path', equals: '/' }, action: 'deny_current_tool', instruction: 'Never the root.' },
    { id: 'stop-root', version: 1, name: 'stop', when: { arg: 'path', equals: '/' }, action: 'stop_task' },
    { id: 'replan', version: 1, name: 'redirect', scope: { tools: ['fs_write'] }, action: 'inject_instruction', instruction: 'Plan first.' },
    { id: 'shadowed', version: 1, name: 'shadow', scope: { categories: ['delete'] }, action: 'stop_task', shadow: true },
  ];
  const snap = snapshot(rules);

  test('priority stop > deny > require_approval > redirect > audit_only/allow', () => {
    expect(evaluateCall(snap, 'tool.before', call('fs_delete', 'delete', { path: '/' }), {}, 0)).toMatchObject({
      decision: 'stop',
      deciding: { ruleId: 'stop-root' },
    });
    expect(evaluateCall(snap, 'tool.before', call('fs_delete', 'delete', { path: '/x' }), {}, 0)).toMatchObject({
      decision: 'require_approval',
      deciding: { ruleId: 'gate-delete', ruleVersion: 2 },
    });
    expect(evaluateCall(snap, 'tool.before', call('fs_write', 'file_change', { path: 'a' }), {}, 0).decision).toBe('redirect');
    expect(evaluateCall(snap, 'tool.before', call('fs_read', 'read', { path: 'a' }), {}, 0).decision).toBe('audit_only');
    expect(evaluateCall(snapshot([]), 'tool.before', call('fs_read', 'read', { path: 'a' }), {}, 0)).toMatchObject({ decision: 'allow', matches: [] });
  });

  test('shadow rules match and change nothing', () => {
    const result = evaluateCall(snap, 'tool.before', call('fs_delete', 'delete', { path: '/x' }), {}, 0);
    expect(result.matches.find((m) => m.ruleId === 'shadowed')).toMatchObject({ shadow: true, decision: 'stop' });
    expect(result.decision).toBe('require_approval');
  });

  test('scope: piece and movement must match the job', () => {
    const scoped = snapshot([{ id: 'm', version: 1, name: 'm', scope: { movement: ['cleanup'] }, action: 'deny_current_tool' }]);
    expect(evaluateCall(scoped, 'tool.before', call('fs_read', 'read', {}), {}, 0).decision).toBe('allow');
    expect(evaluateCall(scoped, 'tool.before', { ...call('fs_read', 'read', {}), scope: { movement: 'cleanup' } }, {}, 0).decision).toBe('deny');
  });

  test('maxFires and cooldown hold a rule back, using the counters passed in', () => {
    const limited = snapshot([
      { id: 'once', version: 1, name: 'once', action: 'inject_instruction', instruction: 'x', limits: { maxFires: 1 } },
      { id: 'cool', version: 1, name: 'cool', action: 'audit_only', limits: { cooldown: '10m' } },
    ]);
    const ctx = call('fs_read', 'read', {});
    const first = evaluateCall(limited, 'tool.before', ctx, {}, 0);
    expect(first.decision).toBe('redirect');
    const counters = recordFires({}, first.matches, 1000);
    const second = evaluateCall(limited, 'tool.before', ctx, counters, 1000 + 60_000);
    expect(second).toMatchObject({ decision: 'allow', limited: ['once', 'cool'] });
    expect(evaluateCall(limited, 'tool.before', ctx, counters, 1000 + 10 * 60_000)).toMatchObject({ decision: 'audit_only', limited: ['once'] });
  });

  test('a gate cannot carry limits: it would switch itself off', () => {
    expect(() => snapshot([{ id: 'g', version: 1, name: 'g', action: 'request_approval', limits: { cooldown: '1m' } }])).toThrow(
      /rule g: limits: limits only apply to inject_instruction, audit_only and notify_admin rules/,
    );
  });

  test('observational rules are de-duplicated by the call state fingerprint', () => {
    const audited = snapshot([{ id: 'note', version: 1, name: 'note', action: 'notify_admin' }]);
    const ctx = { ...call('fs_read', 'read', { path: 'a' }), fingerprint: 'fp-a' };
    const first = evaluateCall(audited, 'tool.before', ctx, {}, 0);
    expect(first.matches).toEqual([expect.objectContaining({ ruleId: 'note', decision: 'audit_only' })]);
    const counters = recordFires({}, first.matches.map((m) => ({ ...m, stateFingerprint: 'fp-a' })), 0);
    expect(evaluateCall(audited, 'tool.before', ctx, counters, 1).matches[0]).toMatchObject({ duplicate: true });
    expect(recordFires(counters, evaluateCall(audited, 'tool.before', ctx, counters, 1).matches, 1)).toEqual(counters);
    expect(evaluateCall(audited, 'tool.before', { ...ctx, fingerprint: 'fp-b' }, counters, 1).matches[0]!.duplicate).toBeUndefined();
  });

  test('instructions are merged in priority order without duplicates', () => {
    const merged = snapshot([
      { id: 'a', version: 1, name: 'a', action: 'inject_instruction', instruction: 'Same text.' },
      { id: 'b', version: 1, name: 'b', action: 'inject_instruction', instruction: 'Same text.' },
      { id: 'c', version: 1, name: 'c', action: 'deny_current_tool', instruction: 'Denied text.' },
    ]);
    expect(evaluateCall(merged, 'tool.before', call('fs_read', 'read', {}), {}, 0).instructions).toEqual(['Denied text.', 'Same text.']);
  });

  test('the batch outcome follows the strongest decision', () => {
    expect(batchOutcome(['allow', 'deny', 'stop'])).toBe('stop');
    expect(batchOutcome(['allow', 'redirect', 'require_approval'])).toBe('park');
    expect(batchOutcome(['deny', 'redirect'])).toBe('redirect');
    expect(batchOutcome(['deny', 'allow'])).toBe('run');
  });
});

describe('batch planning', () => {
  const snap = snapshot([{ id: 'gate', version: 1, name: 'gate', scope: { categories: ['delete'] }, action: 'request_approval' }]);
  const calls = [
    preflight({ id: 'c1', name: 'fs_delete', arguments: '{"path":"a"}' }, ['fs_delete', 'fs_read']),
    preflight({ id: 'c2', name: 'fs_read', arguments: '{"path":"b"}' }, ['fs_delete', 'fs_read']),
  ];
  const evaluations = new Map(
    calls.flatMap((c) => (c.kind === 'tool' ? [[c.callId, evaluateCall(snap, 'tool.before', { ...c, scope: {} }, {}, 0)] as const] : [])),
  );
  const memory = { deniedFingerprints: [], redirectedFingerprints: [], approvalRequests: 0, maxApprovalRequests: 5, completionRuleFires: [] };
  const input = { jobId: 'j', scope: {}, snapshot: snap, calls, evaluations, memory, ruleCounters: {}, now: 0 };

  test('a gated call parks the batch; the allowed one is planned to run after', () => {
    const plan = planBatch(input);
    expect(plan.outcome).toBe('park');
    expect(plan.calls.map((p) => p.kind)).toEqual(['approval', 'run']);
  });

  test('a denied fingerprint is denied again without a request', () => {
    const [first] = planBatch(input).calls;
    if (first?.kind !== 'approval') throw new Error(`expected an approval, got ${first?.kind}`);
    const again = planBatch({ ...input, memory: { ...memory, deniedFingerprints: [first.fingerprint] } });
    expect(again.outcome).toBe('run');
    expect(again.calls[0]).toMatchObject({ kind: 'deny', ruleId: 'gate' });
  });

  test('preflight: parse, known, allowed, schema (defaults filled in)', () => {
    expect(preflight({ id: 'x', name: 'fs_delete', arguments: '{"path":"a"}' }, ['fs_delete'])).toMatchObject({
      kind: 'tool',
      args: { path: 'a', recursive: false },
    });
    expect(preflight({ id: 'x', name: 'fs_delete', arguments: '{"path":"a"}' }, ['fs_read'])).toMatchObject({
      kind: 'error',
      message: 'Error: tool fs_delete is not allowed for this job.',
    });
    expect(preflight({ id: 'x', name: 'fs_delete', arguments: '[1]' }, ['fs_delete'])).toMatchObject({ kind: 'error' });
    expect(preflight({ id: 'x', name: 'fs_delete', arguments: '{"path":"a","force":true}' }, ['fs_delete'])).toMatchObject({
      kind: 'error',
      message: expect.stringMatching(/Unrecognized key/),
    });
    expect(preflight({ id: 'x', name: 'complete', arguments: '{"summary":"ok"}' }, [])).toMatchObject({ kind: 'complete', summary: 'ok' });
  });

  test('paths get one canonical spelling, so a respelled path is the same call for rules and fingerprints', () => {
    const spellings = ['secrets/k', '/srv/data//secrets/k', '/srv/data/./secrets/k', 'x/../secrets/k', '/srv/data/x/../secrets/k'];
    const canonical = spellings.map((path) => {
      const c = preflight({ id: 'x', name: 'fs_read', arguments: JSON.stringify({ path }) }, ['fs_read'], ['/srv/data']);
      return c.kind === 'tool' ? c.args.path : undefined;
    });
    expect(new Set(canonical)).toEqual(new Set(['/srv/data/secrets/k']));
    const move = preflight({ id: 'x', name: 'fs_move', arguments: '{"from":"a/../b","to":"/srv/data/c/"}' }, ['fs_move'], ['/srv/data']);
    expect(move).toMatchObject({ args: { from: '/srv/data/b', to: '/srv/data/c' } });
  });
});

describe('rules files', () => {
  function problems(doc: unknown): string[] {
    try {
      parseRulesDocument(doc, 'rules.yaml');
    } catch (err) {
      expect(err).toBeInstanceOf(RulesFileError);
      return (err as RulesFileError).problems.map((p) => `${p.ruleId ?? '-'} ${p.field}: ${p.message}`);
    }
    throw new Error('expected the document to be refused');
  }

  test('every problem names the rule id and the field, and nothing half-loads', () => {
    const listed = problems({
      version: 1,
      rules: [
        { id: 'ok', version: 1, name: 'fine', action: 'audit_only' },
        { id: 'bad-ttl', version: 1, name: 'x', action: 'request_approval', approval: { ttl: 'tomorrow' } },
        { id: 'bad-tool', version: 1, name: 'x', action: 'audit_only', scope: { tools: ['rm'] } },
        { id: 'no-text', version: 1, name: 'x', action: 'inject_instruction' },
        { id: 'typo', version: 1, name: 'x', action: 'audit_only', shaddow: true },
        { id: 'bad-regex', version: 1, name: 'x', action: 'audit_only', when: { arg: 'path', regex: '(' } },
        { id: 'two-ops', version: 1, name: 'x', action: 'audit_only', when: { arg: 'path', glob: '*', regex: 'a' } },
        { id: 'ok', version: 2, name: 'dup', action: 'audit_only' },
        { id: 'bad-edit', version: 1, name: 'x', action: 'request_approval', scope: { tools: ['fs_delete'] }, approval: { editable: ['mode'] } },
      ],
    });
    expect(listed).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^bad-ttl approval\.ttl: expected a duration/),
        expect.stringMatching(/^bad-tool scope\.tools\[0\]: unknown tool name/),
        expect.stringMatching(/^no-text instruction: inject_instruction needs an instruction/),
        expect.stringMatching(/^typo \(rule\): Unrecognized key: "shaddow"/),
        expect.stringMatching(/^bad-regex when/),
        expect.stringMatching(/^two-ops when/),
        expect.stringMatching(/^ok id: duplicate rule id \(also rules\[0\]\)/),
        expect.stringMatching(/^bad-edit approval\.editable\[0\]: tool fs_delete has no argument "mode"/),
      ]),
    );
  });

  test('a rule without a usable id is named by its position', () => {
    expect(problems({ version: 1, rules: [{ version: 1, name: 'x', action: 'audit_only' }] })).toEqual([
      expect.stringMatching(/^- rules\[0\]\.id: /),
    ]);
    expect(problems({ version: 1, rules: [{ id: 'has space', version: 1, name: 'x', action: 'audit_only' }] })).toEqual([
      expect.stringMatching(/^has space id: expected letters, digits/),
    ]);
  });

  test('the built-in defaults are valid', () => {
    expect(parseRulesDocument(defaultRules, 'defaults').rules.length).toBeGreaterThan(0);
  });
});

describe('the judge failure table', () => {
  const judged = snapshot([
    { id: 'shadow-judge', version: 1, name: 's', condition: 'removes something irreplaceable', action: 'request_approval' },
    {
      id: 'enforced-gate',
      version: 1,
      name: 'e',
      scope: { categories: ['delete'] },
      when: { arg: 'recursive', equals: true },
      condition: 'removes something irreplaceable',
      action: 'request_approval',
      enforceJudge: true,
    },
    { id: 'enforced-semantic-only', version: 1, name: 'n', condition: 'looks like a prompt injection', action: 'request_approval', enforceJudge: true },
    { id: 'enforced-hint', version: 1, name: 'h', condition: 'is sloppy', action: 'inject_instruction', instruction: 'Be careful.', enforceJudge: true },
    { id: 'enforced-scoped', version: 1, name: 'c', scope: { tools: ['fs_chmod'] }, condition: 'weakens security', action: 'request_approval', enforceJudge: true },
  ]);
  const del = call('fs_delete', 'delete', { path: 'photos', recursive: true });
  const all = (v: 'match' | 'no_match' | 'unknown' | 'failed') =>
    Object.fromEntries(['shadow-judge', 'enforced-gate', 'enforced-semantic-only', 'enforced-hint', 'enforced-scoped'].map((id) => [id, v]));

  test('without verdicts, judged rules are candidates and decide nothing yet', () => {
    const first = evaluateCall(judged, 'tool.before', del, {}, 0);
    expect(first.decision).toBe('allow');
    expect(first.judgeCandidates.map((c) => [c.ruleId, c.enforced])).toEqual([
      ['shadow-judge', false],
      ['enforced-gate', true],
      ['enforced-semantic-only', true],
      ['enforced-hint', true],
    ]);
  });

  test('match: enforced rules act, shadow ones are only recorded', () => {
    const result = evaluateCall(judged, 'tool.before', del, {}, 0, { verdicts: all('match') });
    expect(result).toMatchObject({ decision: 'require_approval', deciding: { ruleId: 'enforced-gate', judged: true } });
    expect(result.matches.find((m) => m.ruleId === 'shadow-judge')).toMatchObject({ shadow: true, judged: true });
    expect(result.instructions).toEqual(['Be careful.']);
  });

  test.each(['unknown', 'failed'] as const)('%s: only an enforced approval rule whose deterministic part holds still asks', (verdict) => {
    const result = evaluateCall(judged, 'tool.before', del, {}, 0, { verdicts: all(verdict) });
    expect(result.decision).toBe('require_approval');
    expect(result.matches.map((m) => [m.ruleId, m.fallback])).toEqual([['enforced-gate', true]]);
    // The scope is a deterministic part too: a scoped rule asks when the judge cannot say.
    const chmod = evaluateCall(judged, 'tool.before', call('fs_chmod', 'file_change', { path: 'x', mode: '600' }), {}, 0, { verdicts: all(verdict) });
    expect(chmod.matches.map((m) => [m.ruleId, m.fallback])).toEqual([['enforced-scoped', true]]);
    // A rule over every call with no deterministic part does not fire on a judge failure.
    const read = evaluateCall(judged, 'tool.before', call('fs_read', 'read', { path: 'x' }), {}, 0, { verdicts: all(verdict) });
    expect(read).toMatchObject({ decision: 'allow', matches: [] });
  });

  test('no_match: nothing fires; a rule the judge left out counts as failed', () => {
    expect(evaluateCall(judged, 'tool.before', del, {}, 0, { verdicts: all('no_match') })).toMatchObject({ decision: 'allow', matches: [] });
    expect(evaluateCall(judged, 'tool.before', del, {}, 0, { verdicts: {} }).decision).toBe('require_approval');
  });

  test('a judge failure never lets a deterministic gate open', () => {
    const both = snapshot([
      { id: 'gate', version: 1, name: 'g', scope: { categories: ['delete'] }, action: 'request_approval' },
      { id: 'j', version: 1, name: 'j', condition: 'anything', action: 'audit_only', enforceJudge: true },
    ]);
    expect(evaluateCall(both, 'tool.before', del, {}, 0, { verdicts: { j: 'failed' } }).decision).toBe('require_approval');
  });

  test('rules files keep judged rules to actions a judge may take', () => {
    expect(() => snapshot([{ id: 'j', version: 1, name: 'j', condition: 'x', action: 'stop_task', enforceJudge: true }])).toThrow(
      /rule j: action: a judged rule may only inject_instruction, audit_only, request_approval/,
    );
    expect(() => snapshot([{ id: 'j', version: 1, name: 'j', action: 'audit_only', enforceJudge: true }])).toThrow(
      /rule j: enforceJudge: enforceJudge needs a natural-language condition/,
    );
  });
});

describe('several approval rules on one call', () => {
  test('the request honours all of them', () => {
    const merged = mergeApprovalSettings(
      parseRulesDocument(
        {
          version: 1,
          rules: [
            { id: 'a', version: 1, name: 'a', action: 'request_approval', approval: { ttl: '24h', reviewers: ['alice', 'bob'], editable: ['recursive', 'path'] } },
            { id: 'b', version: 1, name: 'b', action: 'request_approval', approval: { ttl: '1h', reviewers: ['bob', 'carol'], editable: ['path'], signatureRequired: true } },
            { id: 'c', version: 1, name: 'c', action: 'request_approval', approval: { separateRequester: true } },
            { id: 'd', version: 1, name: 'd', action: 'request_approval', approval: { reversible: false } },
          ],
        },
        'test',
      ).rules,
    );
    expect(merged).toEqual({ ttlMs: 3_600_000, reviewers: ['bob'], editable: [], separateRequester: true, signatureRequired: true, notKeptBy: expect.objectContaining({ id: 'd' }) });
    expect(mergeApprovalSettings([])).toMatchObject({ reviewers: null, ttlMs: 86_400_000 });
  });
});

describe('detectors in rules', () => {
  test('a rule can use a detector, and the evaluation names the detectors that fired', () => {
    const rules = snapshot([{ id: 'no-recursive', version: 1, name: 'r', when: { detector: 'recursive_delete' }, action: 'deny_current_tool' }]);
    const result = evaluateCall(rules, 'tool.before', { ...call('fs_delete', 'delete', { path: 'a', recursive: true }), targets: ['a'] }, {}, 0);
    expect(result).toMatchObject({ decision: 'deny', detectors: ['recursive_delete'] });
    const unknownDetector = JSON.parse('{"detector":"rm_rf"}') as RuleInput['when'];
    expect(() => snapshot([{ id: 'x', version: 1, name: 'x', when: unknownDetector, action: 'audit_only' }])).toThrow(/rule x: when/);
  });

  test('no rules: no evaluation work at all, not even detectors', () => {
    const result = evaluateCall(snapshot([]), 'tool.before', { ...call('fs_delete', 'delete', { path: '*', recursive: true }), targets: ['*'] }, {}, 0);
    expect(result).toMatchObject({ decision: 'allow', matches: [], detectors: [] });
  });
});

describe('an undo\'s paths, as written and where they really lead', () => {
  const rule = (arg: string) => snapshot([{ id: 'no-secret', version: 1, name: 'never the secret folder', when: { arg, glob: '/srv/secret/**' }, action: 'deny_current_tool' }]);
  const real = (path: string, to: string) => ({ path, real: to, exists: true, symlink: true });
  const decide = (toolName: string, args: Record<string, unknown>, targets: Array<ReturnType<typeof real>>, on = 'path') =>
    evaluateCall(rule(on), 'tool.before', { ...call(toolName, 'file_change', args), facts: { targets } }, {}, 0).decision;

  test('a rule on `to` sees the real place of an undo of one move, as it does for the move', () => {
    const facts = [real('/srv/link/x', '/srv/secret/x')];
    expect(decide('fs_move', { from: '/srv/a', to: '/srv/link/x', overwrite: false }, facts, 'to')).toBe('deny');
    expect(decide('fs_undo', { job: 'j', call: 'c', path: '/srv/a', to: '/srv/link/x' }, facts, 'to')).toBe('deny');
    expect(decide('fs_undo', { job: 'j', call: 'c', path: '/srv/a', to: '/srv/b' }, [], 'to')).toBe('allow');
  });

  test('every path of an undo of a bulk move, as `path`, as written and as resolved', () => {
    const moves = [
      { from: '/srv/a', to: '/srv/b' },
      { from: '/srv/c', to: '/srv/link/d' },
    ];
    expect(decide('fs_undo', { job: 'j', call: 'c', moves }, [real('/srv/link/d', '/srv/secret/d')])).toBe('deny');
    expect(decide('fs_move_many', { moves }, [real('/srv/link/d', '/srv/secret/d')])).toBe('deny');
    expect(decide('fs_undo', { job: 'j', call: 'c', moves }, [])).toBe('allow');
  });
});
