import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AirlockClient } from '../../client/airlock-client';
import { freePort } from '../helpers/ports';
import { startReplayServer, type ReplayServer } from '../../ops/dev/replay-server';
import type { AuditEvent } from '../../core/audit/events';
import { parseConfig } from '../../core/config/config';
import type { AgentJobStateView } from '../../core/job/job-view';
import { createTestEnv, type TestEnv } from '../helpers/temporal-env';
import { spawnNode, type Spawned } from '../helpers/processes';

/**
 * The real thing: every worker in one spawned process (`all.js`) serving
 * Prometheus metrics, a job through the dev server, and `/metrics` scraped
 * over HTTP before and after.
 */

interface Series {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** Prometheus text format, the sample lines. */
function parseMetrics(text: string): Series[] {
  const out: Series[] = [];
  for (const line of text.split('\n')) {
    const m = /^([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (m === null || line.startsWith('#')) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    out.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return out;
}

/** Sum of the series of one metric whose labels include these. */
function total(series: readonly Series[], name: string, labels: Record<string, string> = {}): number {
  return series.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v)).reduce((sum, s) => sum + s.value, 0);
}

let env: TestEnv;
let replay: ReplayServer;
let client: AirlockClient;
let dir: string;
let root: string;
let metricsAddress: string;
let workerEnv: NodeJS.ProcessEnv;
const spawned: Spawned[] = [];

async function scrape(): Promise<Series[]> {
  const response = await fetch(`http://${metricsAddress}/metrics`);
  expect(response.status).toBe(200);
  return parseMetrics(await response.text());
}

function spawnWorker(script: string, extra: Record<string, string> = {}): Spawned {
  const worker = spawnNode(script, [], { ...workerEnv, ...extra });
  spawned.push(worker);
  return worker;
}

async function waitForState(jobId: string, predicate: (view: AgentJobStateView) => boolean): Promise<void> {
  for (let i = 0; ; i++) {
    const view = await client.state(jobId).catch(() => undefined);
    if (view !== undefined && predicate(view)) return;
    if (i > 600) throw new Error(`job ${jobId} never got there: ${JSON.stringify(view)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  env = await createTestEnv();
  replay = await startReplayServer({ script: { turns: [] } });
  dir = mkdtempSync(join(tmpdir(), 'airlock-metrics-'));
  root = join(dir, 'root');
  mkdirSync(root);
  const rulesFile = join(dir, 'rules.json');
  writeFileSync(
    rulesFile,
    JSON.stringify({
      version: 1,
      rules: [{ id: 'approve-deletes', version: 1, name: 'Deleting needs approval', scope: { categories: ['delete'] }, action: 'request_approval' }],
    }),
  );
  metricsAddress = `127.0.0.1:${await freePort()}`;
  workerEnv = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TEMPORAL_ADDRESS: env.address,
    TEMPORAL_NAMESPACE: env.namespace,
    AIRLOCK_DATA_DIR: join(dir, 'data'),
    AIRLOCK_ROOTS: root,
    AIRLOCK_RULES_FILE: rulesFile,
    OPENAI_BASE_URL: replay.baseUrl,
    AIRLOCK_METRICS_ADDRESS: metricsAddress,
  };
  client = await AirlockClient.connect(parseConfig({ TEMPORAL_ADDRESS: env.address, TEMPORAL_NAMESPACE: env.namespace, AIRLOCK_DATA_DIR: join(dir, 'data') }));
});

afterAll(async () => {
  for (const s of spawned) s.child.kill('SIGKILL');
  await client?.close();
  await replay?.close();
  await env?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

test('one worker process serving every queue counts an allowed and an approved call on one endpoint, next to the SDK metrics', async () => {
  const worker = spawnWorker('dist/workers/all.js');
  await worker.waitFor(/workers polling airlock-agent, airlock-tools, airlock-judge/);
  expect(worker.output()).toContain(`Prometheus metrics on http://${metricsAddress}/metrics`);
  const before = await scrape();

  writeFileSync(join(root, 'old.tar'), 'backup');
  replay.setScript({
    turns: [
      { tool_calls: [{ name: 'fs_list', arguments: { path: '.' } }] },
      { tool_calls: [{ name: 'fs_delete', arguments: { path: 'old.tar' } }] },
      { tool_calls: [{ name: 'complete', arguments: { summary: 'removed old.tar' } }] },
    ],
  });
  const { jobId } = await client.startJob({ jobId: 'metrics-job', goal: 'tidy up', requester: 'tester' });
  await waitForState(jobId, (s) => s.status === 'awaiting_approval' && s.pending.length === 1);
  expect(await client.decide(jobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: true });
  expect(await client.result(jobId)).toMatchObject({ status: 'completed' });
  expect(existsSync(join(root, 'old.tar'))).toBe(false);

  const after = await scrape();
  const moved = (name: string, labels: Record<string, string> = {}) => total(after, name, labels) - total(before, name, labels);
  const ns = { namespace: env.namespace };
  expect(moved('airlock_policy_decisions_total', { ...ns, action: 'allow', tool: 'fs_list' })).toBe(1);
  expect(moved('airlock_policy_decisions_total', { ...ns, action: 'require_approval', tool: 'fs_delete' })).toBe(1);
  expect(moved('airlock_policy_decisions_total')).toBe(2);
  expect(moved('airlock_approvals_requested_total', { ...ns, rule: 'approve-deletes' })).toBe(1);
  expect(moved('airlock_approvals_decided_total', { ...ns, rule: 'approve-deletes', decision: 'approve' })).toBe(1);
  expect(moved('airlock_approvals_decided_total')).toBe(1);
  expect(moved('airlock_approvals_expired_total')).toBe(0);
  expect(moved('airlock_executions_total', { ...ns, tool: 'fs_list', outcome: 'ok' })).toBe(1);
  expect(moved('airlock_executions_total', { ...ns, tool: 'fs_delete', outcome: 'ok' })).toBe(1);
  expect(moved('airlock_executions_total')).toBe(2);
  expect(moved('airlock_reconciliations_total')).toBe(0);
  expect(moved('airlock_audit_write_failures_total')).toBe(0);
  // Labels stay bounded: no series names the job.
  expect(after.filter((s) => s.name.startsWith('airlock_') && Object.values(s.labels).some((v) => v.includes(jobId)))).toEqual([]);
  // The SDK runtime's own metrics, from the workers of this process.
  expect(after.some((s) => s.name.startsWith('temporal_') && s.labels.task_queue === 'airlock-tools')).toBe(true);
  expect(after.some((s) => s.name.startsWith('temporal_') && s.labels.task_queue === 'airlock-agent')).toBe(true);

  // The audit log records the same decisions, now with their rule.
  const audit = readFileSync(join(dir, 'data', 'audit', 'audit.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as AuditEvent)
    .filter((e) => e.jobId === jobId);
  expect(audit.filter((e) => e.type === 'approval_decided').map((e) => e.data)).toEqual([expect.objectContaining({ ruleId: 'approve-deletes', decision: 'approve' })]);
  expect(audit.filter((e) => e.type === 'policy_evaluation')).toHaveLength(2);

  // A second process cannot take the same address: it stops at start, in one line naming the variable.
  const second = spawnWorker('dist/workers/airlock-tools.js');
  expect(await second.exited()).toBe(1);
  expect(second.output().trim().split('\n')).toEqual([expect.stringMatching(/^airlock worker: invalid configuration: AIRLOCK_METRICS_ADDRESS: cannot serve metrics on 127\.0\.0\.1:\d+: /)]);

  worker.child.kill('SIGTERM');
  expect(await worker.exited()).toBe(0);
});

test.each([['localhost:9464'], ['127.0.0.1'], ['127.0.0.1:70000']])('AIRLOCK_METRICS_ADDRESS=%s stops a worker at start with one line naming the variable', async (address) => {
  const worker = spawnWorker('dist/workers/airlock-tools.js', { AIRLOCK_METRICS_ADDRESS: address });
  expect(await worker.exited()).toBe(1);
  expect(worker.output().trim().split('\n')).toEqual([
    expect.stringMatching(/^airlock worker: invalid configuration: AIRLOCK_METRICS_ADDRESS: expected IP:port to listen on, .*\(got "/),
  ]);
});
