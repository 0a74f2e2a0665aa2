import { execFile } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { startReplayServer, type ReplayServer } from '../../ops/dev/replay-server';
import { repoRoot } from '../helpers/processes';

const run = promisify(execFile);
let dir: string;
let rulesFile: string;
let judge: ReplayServer;

const RULES = `# house rules
version: 1
rules:
  # keep this comment
  - id: approve-deletes
    version: 1
    name: Deleting needs approval
    scope: { categories: [delete] }
    action: request_approval
  - id: no-recursive
    version: 2
    name: No recursive deletes
    when: { detector: recursive_delete }
    action: deny_current_tool
    instruction: Delete files one by one.
`;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-rules-'));
  judge = await startReplayServer({ script: { turns: [] } });
});
beforeEach(() => {
  rulesFile = join(dir, 'rules.yaml');
  writeFileSync(rulesFile, RULES);
});
afterAll(async () => {
  await judge.close();
  rmSync(dir, { recursive: true, force: true });
});

async function airlock(args: string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const out = await run(process.execPath, [join(repoRoot, 'bin', 'airlock.js'), ...args], {
      env: { PATH: process.env.PATH, AIRLOCK_DATA_DIR: join(dir, 'data'), AIRLOCK_RULES_FILE: rulesFile, ...env },
    });
    return { code: 0, ...out };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

test('validate lists every problem with its rule id and field', async () => {
  expect(await airlock(['rules', 'validate'])).toMatchObject({ code: 0, stdout: expect.stringMatching(/^valid: .*rules\.yaml: 2 enabled rule\(s\)/) });
  const bad = join(dir, 'bad.yaml');
  writeFileSync(bad, 'version: 1\nrules:\n  - { id: a, version: 1, name: a, action: request_approval, limits: { maxFires: 1 } }\n  - { id: b, version: 0, name: b, action: audit_only, colour: red }\n');
  const out = await airlock(['rules', 'validate', bad]);
  expect(out.code).toBe(1);
  expect(out.stdout).toMatch(/invalid: .*bad\.yaml: 3 problem\(s\)/);
  expect(out.stdout).toMatch(/rule a: limits: /);
  expect(out.stdout).toMatch(/rule b: version: /);
  expect(out.stdout).toMatch(/rule b: \(rule\): Unrecognized key: "colour"/);
});

test('list and test show what a new job would get and why', async () => {
  const listed = JSON.parse((await airlock(['rules', 'list', '--json'])).stdout) as { rules: Array<{ id: string }> };
  expect(listed.rules.map((r) => r.id)).toEqual(['approve-deletes', 'no-recursive']);
  const dry = await airlock(['rules', 'test', '--tool', 'fs_delete', '--args', '{"path":"photos","recursive":true}']);
  expect(dry.code).toBe(0);
  expect(dry.stdout).toContain('approve-deletes v1: matches → request_approval');
  expect(dry.stdout).toContain('no-recursive v2: matches → deny_current_tool');
  expect(dry.stdout).toContain('detectors fired: recursive_delete');
  expect(dry.stdout).toMatch(/decision: deny \(rule no-recursive\)/);
  const json = JSON.parse((await airlock(['rules', 'test', '--tool', 'fs_delete', '--args', '{"path":"a.txt"}', '--json'])).stdout) as {
    decision: string;
    candidates: Array<{ ruleId: string; holds: boolean }>;
  };
  expect(json.decision).toBe('require_approval');
  expect(json.candidates).toEqual([
    expect.objectContaining({ ruleId: 'approve-deletes', holds: true }),
    expect.objectContaining({ ruleId: 'no-recursive', holds: false }),
  ]);
  expect(await airlock(['rules', 'test', '--tool', 'fs_delete', '--args', '{"path":1}'])).toMatchObject({
    code: 2,
    stderr: expect.stringMatching(/invalid arguments for fs_delete: path/),
  });
});

test('test --tools lists every registered tool with its category, and what this tools config can run', async () => {
  const plain = await airlock(['rules', 'test', '--tools']);
  expect(plain.code).toBe(0);
  expect(plain.stdout).toContain('tools config: none, file tools only');
  expect(plain.stdout).toMatch(/fs_delete +delete +risk high\n/);
  expect(plain.stdout).toMatch(/service_status +read +risk low — not configured here \(needs services\)/);
  const toolsFile = join(dir, 'tools.yaml');
  writeFileSync(toolsFile, 'version: 1\nservices:\n  jellyfin: { adapter: docker, container: jellyfin }\nhosts:\n  allow: [api.github.com]\n');
  const listed = JSON.parse((await airlock(['rules', 'test', '--tools', '--json'], { AIRLOCK_TOOLS_CONFIG: toolsFile })).stdout) as {
    toolsConfig: string;
    tools: Array<{ name: string; category: string; available: boolean }>;
  };
  expect(listed.toolsConfig).toBe(toolsFile);
  expect(listed.tools.map((t) => [t.name, t.category, t.available])).toEqual([
    ['fs_list', 'read', true],
    ['fs_read', 'read', true],
    ['fs_stat', 'read', true],
    ['fs_write', 'file_change', true],
    ['fs_move', 'file_change', true],
    ['fs_move_many', 'file_change', true],
    ['fs_delete', 'delete', true],
    ['fs_chmod', 'file_change', true],
    ['fs_undo', 'file_change', true],
    ['service_status', 'read', true],
    ['service_start', 'service_control', true],
    ['service_stop', 'service_control', true],
    ['service_restart', 'service_control', true],
    ['http_request', 'external_send', true],
    ['command_run', 'command_execution', false],
  ]);
  // A bad tools config is one clear line, not a stack.
  writeFileSync(toolsFile, 'version: 1\nservices:\n  jellyfin: { adapter: docker }\n');
  const bad = await airlock(['rules', 'test', '--tools'], { AIRLOCK_TOOLS_CONFIG: toolsFile });
  expect(bad.code).not.toBe(0);
  expect(bad.stderr).toContain(`tools config ${toolsFile} (AIRLOCK_TOOLS_CONFIG) is invalid: services.jellyfin.container:`);
});

test('add, disable and enable write new versions and keep the comments; a bad edit changes nothing', async () => {
  const added = await airlock(['rules', 'add', '--rule', '{id: audit-reads, name: Record reads, scope: {categories: [read]}, action: audit_only}']);
  expect(added).toMatchObject({ code: 0, stdout: expect.stringMatching(/added rule audit-reads v1/) });
  expect(await airlock(['rules', 'disable', 'no-recursive'])).toMatchObject({ stdout: expect.stringMatching(/no-recursive is now disabled as v3/) });
  expect(await airlock(['rules', 'disable', 'no-recursive'])).toMatchObject({ stdout: expect.stringMatching(/already disabled \(v3\)/) });
  const text = readFileSync(rulesFile, 'utf8');
  expect(text).toContain('# keep this comment');
  expect(text).toContain('audit-reads');
  const before = readFileSync(rulesFile, 'utf8');
  expect(await airlock(['rules', 'add', '--rule', '{id: audit-reads, name: again, action: audit_only}'])).toMatchObject({ code: 2 });
  const invalid = await airlock(['rules', 'add', '--rule', '{id: broken, name: x, action: explode}']);
  expect(invalid.code).toBe(1);
  expect(invalid.stderr).toMatch(/rule broken: action: /);
  expect(readFileSync(rulesFile, 'utf8')).toBe(before);
  expect(await airlock(['rules', 'enable', 'ghost'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/no rule ghost/) });
  // The file keeps its permissions; an empty `rules:` is a list to add to.
  chmodSync(rulesFile, 0o600);
  expect(await airlock(['rules', 'enable', 'no-recursive'])).toMatchObject({ stdout: expect.stringMatching(/enabled as v4/) });
  expect(statSync(rulesFile).mode & 0o777).toBe(0o600);
  const bare = join(dir, 'bare.yaml');
  writeFileSync(bare, 'version: 1\nrules:\n');
  expect(await airlock(['rules', 'add', '--file', bare, '--rule', '{id: first, name: first, action: audit_only}'])).toMatchObject({ code: 0 });
  expect(readFileSync(bare, 'utf8')).toMatch(/id: first/);
  writeFileSync(`${rulesFile}.lock`, '');
  expect(await airlock(['rules', 'disable', 'no-recursive'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/another rules edit is running/) });
  rmSync(`${rulesFile}.lock`);
  expect(await airlock(['rules', 'add', '--rule', '{id: x, name: x, action: audit_only}'], { AIRLOCK_RULES_FILE: '' })).toMatchObject({
    code: 2,
    stderr: expect.stringMatching(/no rules file to change/),
  });
});

test('judge eval prints precision, recall, unknown and routing rates and latency for the configured endpoint', async () => {
  judge.setScript({ turns: [{ content: '{"version":1,"decisions":[{"rule_id":"r","result":"match","confidence":0.7}]}' }] });
  const set = join(dir, 'set.json');
  const rule = { id: 'r', condition: 'deletes something irreplaceable', scope: { categories: ['delete'] } };
  writeFileSync(
    set,
    JSON.stringify({
      version: 1,
      cases: [
        { id: 'hit', rule, call: { tool: 'fs_delete', category: 'delete', arguments: { path: 'album' } }, expected: 'match' },
        { id: 'false-alarm', rule, call: { tool: 'fs_delete', category: 'delete', arguments: { path: 'tmp.log' } }, expected: 'no_match' },
        { id: 'unrouted', rule, call: { tool: 'fs_read', category: 'read', arguments: { path: 'album' } }, expected: 'no_match' },
      ],
    }),
  );
  const out = await airlock(['judge', 'eval', '--set', set, '--json'], { AIRLOCK_JUDGE_BASE_URL: judge.baseUrl });
  expect(out.code).toBe(0);
  const { report } = JSON.parse(out.stdout) as { report: Record<string, unknown> };
  expect(report).toMatchObject({ cases: 3, routed: 2, precision: 0.5, recall: 1, unknownRate: 0 });
  expect(report.routingRate).toBeCloseTo(2 / 3);
  expect(typeof report.latencyP95Ms).toBe('number');
  const text = await airlock(['judge', 'eval', '--set', set], { AIRLOCK_JUDGE_BASE_URL: judge.baseUrl });
  expect(text.stdout).toMatch(/precision 50\.0%\s+recall 100\.0%\s+unknown 0\.0%\s+routed to the judge 66\.7%/);
  expect(text.stdout).toMatch(/miss: false-alarm: expected no_match, got match/);
  expect((await airlock(['judge', 'eval', '--set', join(dir, 'missing.json')])).code).toBe(2);
});

test('audit reads the local audit log with filters', async () => {
  mkdirSync(join(dir, 'data', 'audit'), { recursive: true });
  const lines = [
    { type: 'approval_requested', jobId: 'j1', at: '2026-01-01T00:00:00.000Z', policyVersion: 'v', data: { toolName: 'fs_delete' } },
    { type: 'tool_executed', jobId: 'j1', at: '2026-01-01T00:00:01.000Z', policyVersion: 'v', data: { toolName: 'fs_delete', ok: true } },
    { type: 'tool_executed', jobId: 'j2', at: '2026-01-01T00:00:02.000Z', policyVersion: 'v', data: { toolName: 'fs_read', ok: true } },
  ];
  writeFileSync(join(dir, 'data', 'audit', 'audit.jsonl'), `${lines.map((l) => JSON.stringify(l)).join('\n')}\n{"torn`);
  const j1 = JSON.parse((await airlock(['audit', '--job', 'j1', '--json'])).stdout) as unknown[];
  expect(j1).toHaveLength(2);
  const executed = JSON.parse((await airlock(['audit', '--type', 'tool_executed', '--limit', '1', '--json'])).stdout) as Array<{ jobId: string }>;
  expect(executed.map((e) => e.jobId)).toEqual(['j2']);
  expect((await airlock(['audit', '--type', 'nonsense'])).code).toBe(2);
});
