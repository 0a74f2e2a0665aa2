import { execFile, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { AuditEvent } from '../../core/audit/events';
import { createTestEnv, type TestEnv } from '../helpers/temporal-env';
import { repoRoot } from '../helpers/processes';

const run = promisify(execFile);
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const RAW_UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200b\u200e\u200f\u2028-\u202e\u2060-\u206f\ufeff]/;
let env: TestEnv;
let dir: string;

beforeAll(async () => {
  env = await createTestEnv();
  dir = mkdtempSync(join(tmpdir(), 'airlock-cli-'));
});
afterAll(async () => {
  await env.close();
  rmSync(dir, { recursive: true, force: true });
});

async function node(script: string, args: string[], extra: Record<string, string>): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const out = await run(process.execPath, [join(repoRoot, script), ...args], {
      env: { PATH: process.env.PATH, AIRLOCK_DATA_DIR: join(dir, 'data'), TEMPORAL_ADDRESS: env.address, TEMPORAL_NAMESPACE: env.namespace, ...extra },
      timeout: 60_000,
    });
    return { code: 0, ...out };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const cli = (args: string[], extra: Record<string, string> = {}) => node('bin/airlock.js', args, extra);

test.each([
  ['bin/airlock.js', ['pending']],
  ['dist/workers/airlock-agent.js', []],
  ['dist/workers/airlock-tools.js', []],
  ['dist/workers/airlock-judge.js', []],
  ['dist/workers/all.js', []],
])('a malformed TEMPORAL_ADDRESS stops %s with one line naming it', async (script, args) => {
  const out = await node(script, args, { TEMPORAL_ADDRESS: 'temporal-on-the-nas', OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' });
  expect(out.code).toBe(1);
  expect(out.stderr.trim().split('\n')).toHaveLength(1);
  expect(out.stderr).toMatch(/TEMPORAL_ADDRESS: expected host:port, for example 127\.0\.0\.1:7233 \(got "temporal-on-the-nas"\)/);
});

test('other variables are checked the same way', async () => {
  const out = await node('dist/workers/airlock-tools.js', [], { AIRLOCK_TOOLS_CONCURRENCY: 'lots' });
  expect(out).toMatchObject({ code: 1 });
  expect(out.stderr.trim()).toMatch(/^airlock worker: invalid configuration: AIRLOCK_TOOLS_CONCURRENCY: expected a whole number/);
  const noModel = await node('dist/workers/airlock-agent.js', [], {});
  expect(noModel.stderr.trim()).toMatch(/OPENAI_API_KEY: required when OPENAI_BASE_URL is not set/);
});

test('an invalid rules file stops the agent worker at start-up with every problem listed', async () => {
  const file = join(dir, 'rules.yaml');
  writeFileSync(
    file,
    [
      'version: 1',
      'rules:',
      '  - { id: a, version: 1, name: x, action: request_approval, approval: { ttl: soon } }',
      '  - { id: b, version: 1, name: x, action: explode }',
    ].join('\n'),
  );
  const out = await node('dist/workers/airlock-agent.js', [], { AIRLOCK_RULES_FILE: file, OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' });
  expect(out.code).toBe(1);
  expect(out.stderr.trim().split('\n')).toHaveLength(1);
  expect(out.stderr).toMatch(/rule a: approval\.ttl: expected a duration/);
  expect(out.stderr).toMatch(/rule b: action: /);
});

test('usage errors exit 2 with a hint; a missing job and an unreachable server exit 1 with one line', async () => {
  expect(await cli(['frobnicate'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/unknown command "frobnicate"; run airlock --help/) });
  expect(await cli(['run'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/--goal is required/) });
  expect(await cli(['approve', 'j', '--set', 'novalue'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/--set takes field=value/) });
  expect(await cli(['run', '--goal', 'x', '--tools', 'fs_read,launch_missiles'])).toMatchObject({ code: 2 });
  const missing = await cli(['show', 'no-such-job']);
  expect(missing.code).toBe(1);
  expect(missing.stderr.trim()).toMatch(/^airlock show: /);
  expect(missing.stderr.trim().split('\n')).toHaveLength(1);
  const down = await cli(['pending'], { TEMPORAL_ADDRESS: '127.0.0.1:1' });
  expect(down.code).toBe(1);
  expect(down.stderr.trim()).toMatch(/cannot reach the Temporal server .*airlock dev/);
  expect((await cli(['--help'])).stdout).toMatch(/approve .*Approve a pending request/);
});

describe('the CLI writes all of its output, whatever reads it', () => {
  const cliPath = join(repoRoot, 'bin', 'airlock.js');
  const cliEnv = () => ({ PATH: process.env.PATH, AIRLOCK_DATA_DIR: join(dir, 'data') });
  let events: AuditEvent[];

  beforeAll(() => {
    events = Array.from({ length: 4000 }, (_, i) => ({
      type: 'policy_evaluation' as const,
      jobId: `job-${i % 7}\x1b[31m`,
      at: new Date(Date.UTC(2025, 0, 1) + i * 1000).toISOString(),
      policyVersion: 'v1',
      data: { callId: `call_${i}`, toolName: 'fs_write', decision: 'allow', outcome: 'allowed', argsSummary: `${'x'.repeat(300)} \u202e` },
    }));
    mkdirSync(join(dir, 'data', 'audit'), { recursive: true });
    writeFileSync(join(dir, 'data', 'audit', 'audit.jsonl'), `${events.map((e) => JSON.stringify(e)).join('\n')}\n`);
  });

  test('the audit log is more than a megabyte', () => {
    expect(JSON.stringify(events).length).toBeGreaterThan(1 << 20);
  });

  test('audit --json read slowly through a pipe is complete and parses', async () => {
    const child = spawn(process.execPath, [cliPath, 'audit', '--json', '--limit', '100000'], { env: cliEnv() });
    const chunks: Buffer[] = [];
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    // A reader slower than the writer: the CLI's command is done long before its output is.
    child.stdout.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      child.stdout.pause();
      setTimeout(() => child.stdout.resume(), 5);
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' });
    const parsed = JSON.parse(Buffer.concat(chunks).toString('utf8')) as AuditEvent[];
    expect(parsed).toEqual(events);
  });

  test('audit --json | cat is complete', async () => {
    const { stdout, stderr } = await run('sh', ['-c', `"${process.execPath}" "${cliPath}" audit --json --limit 100000 | cat`], {
      env: cliEnv(),
      maxBuffer: 64 << 20,
    });
    expect(stderr).toBe('');
    expect(JSON.parse(stdout)).toEqual(events);
  });

  test.each([
    ['audit --json', '--json', 1000],
    ['audit (lines)', '', 5000],
  ])('%s | head -c N gets its N bytes; the CLI exits 0 without a word', async (_name, json, bytes) => {
    const script = `{ "${process.execPath}" "${cliPath}" audit ${json} --limit 100000; echo "cli exited $?" >&2; } | head -c ${bytes}`;
    const { stdout, stderr } = await run('sh', ['-c', script], { env: cliEnv(), timeout: 60_000, encoding: 'buffer' });
    expect(stdout).toHaveLength(bytes);
    expect(stderr.toString()).toBe('cli exited 0\n');
  });

  test('audit lines show the log escaped', async () => {
    const out = await cli(['audit', '--limit', '3']);
    expect(out).toMatchObject({ code: 0, stderr: '' });
    // A header and three rows, every value escaped: the job id's escape sequence is shown, not run.
    expect(out.stdout.trim().split('\n')).toHaveLength(4);
    expect(out.stdout).not.toMatch(RAW_UNSAFE);
    expect(out.stdout).toMatch(/job-0\\x1b\[31m +policy_evaluation +fs_write /);
  });
});

test('audit reports lines that are not events (a torn line, a fragment glued to an event) instead of skipping them quietly', async () => {
  const data = join(dir, 'damaged');
  mkdirSync(join(data, 'audit'), { recursive: true });
  const event = (n: number) => JSON.stringify({ type: 'runtime_error', jobId: 'job-d', at: `2025-01-01T00:00:0${n}.000Z`, policyVersion: 'v', data: { code: 'model_error', error: `e${n}` } });
  writeFileSync(join(data, 'audit', 'audit.jsonl'), [event(1), `{"type":"tool_exec${event(2)}`, '[1,2]', event(3), '{"type":"tool_exec'].join('\n'));
  for (const json of [[], ['--json']]) {
    const out = await cli(['audit', ...json], { AIRLOCK_DATA_DIR: data });
    expect(out.code).toBe(0);
    expect(out.stderr.trim()).toBe(`airlock audit: 3 line(s) of ${join(data, 'audit', 'audit.jsonl')} are not audit events and were not shown: lines 2, 3, 5`);
    expect(out.stdout).toContain('e1');
    expect(out.stdout).toContain('e3');
  }
});
