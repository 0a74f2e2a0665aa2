import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AirlockClient } from '../../client/airlock-client';
import { freePort } from '../helpers/ports';
import { startReplayServer, type ReplayServer } from '../../ops/dev/replay-server';
import { parseConfig } from '../../core/config/config';
import type { AgentJobStateView } from '../../core/job/job-view';
import { spawnNode, type Spawned } from '../helpers/processes';
import { createTestEnv, type TestEnv } from '../helpers/temporal-env';

/**
 * A real worker process (`all.js`) with a workflow cache of two, as
 * `AIRLOCK_WORKFLOW_CACHE=2` sets it, serving Prometheus metrics: six jobs
 * park, the SDK's own counters show the worker let parked jobs go and
 * replayed them from their histories when their decisions woke them, and
 * every job completes.
 */

const CACHE = 2;
const JOBS = 6;

let env: TestEnv;
let replay: ReplayServer;
let client: AirlockClient;
let dir: string;
let root: string;
let metricsAddress: string;
let worker: Spawned | undefined;

beforeAll(async () => {
  env = await createTestEnv();
  replay = await startReplayServer({ script: { turns: [] } });
  dir = mkdtempSync(join(tmpdir(), 'airlock-eviction-'));
  root = join(dir, 'root');
  mkdirSync(root);
  const rulesFile = join(dir, 'rules.json');
  writeFileSync(
    rulesFile,
    JSON.stringify({ version: 1, rules: [{ id: 'approve-deletes', version: 1, name: 'deletes', scope: { categories: ['delete'] }, action: 'request_approval' }] }),
  );
  // A free port can be taken by another process before the worker binds it: then another port.
  for (let tries = 1; ; tries++) {
    metricsAddress = `127.0.0.1:${await freePort()}`;
    worker = spawnNode('dist/workers/all.js', [], {
      PATH: process.env.PATH,
      HOME: process.env.HOME,
      TEMPORAL_ADDRESS: env.address,
      TEMPORAL_NAMESPACE: env.namespace,
      AIRLOCK_DATA_DIR: join(dir, 'data'),
      AIRLOCK_ROOTS: root,
      AIRLOCK_RULES_FILE: rulesFile,
      OPENAI_BASE_URL: replay.baseUrl,
      AIRLOCK_METRICS_ADDRESS: metricsAddress,
      AIRLOCK_WORKFLOW_CACHE: String(CACHE),
    });
    try {
      await worker.waitFor(/workers polling airlock-agent/);
      break;
    } catch (err) {
      if (tries >= 5 || !worker.output().includes('Address already in use')) throw err;
    }
  }
  client = await AirlockClient.connect(parseConfig({ TEMPORAL_ADDRESS: env.address, TEMPORAL_NAMESPACE: env.namespace, AIRLOCK_DATA_DIR: join(dir, 'data') }));
});

afterAll(async () => {
  worker?.child.kill('SIGKILL');
  await client?.close();
  await replay?.close();
  await env?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/**
 * One of the SDK's metrics for the agent worker of this namespace, from
 * `/metrics`; a series that is not there fails, it never reads as 0.
 */
async function agentMetric(name: string): Promise<number> {
  const response = await fetch(`http://${metricsAddress}/metrics`);
  expect(response.status).toBe(200);
  const lines = (await response.text())
    .split('\n')
    .filter((l) => l.startsWith(`${name}{`) && l.includes(`namespace="${env.namespace}"`) && l.includes('task_queue="airlock-agent"'));
  if (lines.length === 0) throw new Error(`/metrics has no ${name} series for the agent worker of ${env.namespace} (a counter has one from its first count)`);
  return lines.reduce((sum, l) => sum + Number(l.slice(l.lastIndexOf(' ') + 1)), 0);
}

async function waitForState(jobId: string, predicate: (view: AgentJobStateView) => boolean): Promise<void> {
  for (let i = 0; ; i++) {
    const view = await client.state(jobId).catch(() => undefined);
    if (view !== undefined && predicate(view)) return;
    if (i > 600) throw new Error(`job ${jobId} never got there: ${JSON.stringify(view)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('parked jobs are evicted from the worker cache, replayed from history when approved, and complete', async () => {
  const jobs: string[] = [];
  for (let i = 0; i < JOBS; i++) {
    writeFileSync(join(root, `evict-${i}.txt`), `${i}`);
    replay.setScript({
      turns: [
        { tool_calls: [{ name: 'fs_read', arguments: { path: `evict-${i}.txt` } }] },
        { tool_calls: [{ name: 'fs_delete', arguments: { path: `evict-${i}.txt` } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'deleted' } }] },
      ],
    });
    const { jobId } = await client.startJob({ jobId: `evict-${i}`, goal: 'delete a file', requester: 'tester' });
    await waitForState(jobId, (s) => s.status === 'awaiting_approval' && s.pending.length === 1);
    jobs.push(jobId);
  }
  // Each job parked after the first two pushed an older one out of the cache.
  expect(await agentMetric('temporal_sticky_cache_total_forced_eviction')).toBeGreaterThanOrEqual(JOBS - CACHE);
  expect(await agentMetric('temporal_sticky_cache_size')).toBeLessThanOrEqual(CACHE);

  // One at a time: each decision wakes its job on the worker's sticky queue, and an evicted one is not in the cache.
  for (const jobId of jobs) expect(await client.decide(jobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: true });
  for (const [i, jobId] of jobs.entries()) {
    expect(await client.result(jobId)).toMatchObject({ status: 'completed', summary: 'deleted' });
    expect(existsSync(join(root, `evict-${i}.txt`))).toBe(false);
  }
  // A task for a job the cache no longer held: the worker fetched its history and replayed it.
  expect(await agentMetric('temporal_sticky_cache_miss')).toBeGreaterThanOrEqual(JOBS - CACHE);
});
