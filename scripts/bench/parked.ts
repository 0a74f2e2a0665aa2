import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import type { Client } from '@temporalio/client';
import { AirlockClient } from '../../client/airlock-client';
import { startReplayServer } from '../../ops/dev/replay-server';
import { parseConfig } from '../../core/config/config';
import { projectRoot } from '../../ops/dev/project-root';
import type { BenchOptions } from './args';
import type { Figure } from './figures';
import { call, completeTurn, completed, parkedQuery, pool, startJob } from './jobs';
import { cpuSeconds, ownCpuSeconds, rssBytes, timedRun } from './processes';
import { writeRules } from './rules';
import { PARKED_NAMESPACE, type Stack } from './stack';
import { sleep, sampled } from './stats';
import { partWorkerEnv, startWorkerProcesses } from './worker-processes';
import { countTaskTroubles } from './task-troubles';

/**
 * Parked-job scale, on its own namespace with the agent worker in its own
 * process: park N jobs, read the worker's memory, list them with the CLI,
 * approve them all and wait for every job to complete.
 *
 * The replay model gives every job the same call, so each asks to set one
 * shared file to the mode it already has: every approval then revalidates
 * against an unchanged target and really runs, as a per-job file would.
 */

const MiB = 1024 * 1024;
// The SDK core colours its console lines.
const ANSI = new RegExp(`${String.fromCharCode(27)}\\[[0-9;]*m`, 'g');

async function waitForCount(client: Client, query: string, target: number, timeoutMs: number): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { count } = await client.workflow.count(query);
    if (count >= target) return count;
    if (Date.now() > deadline) throw new Error(`only ${count} of ${target} jobs matched ${query} within ${timeoutMs / 1000} s`);
    await sleep(250);
  }
}

export async function parkedPart(stack: Stack, options: BenchOptions): Promise<Figure[]> {
  const n = options.parked;
  const base = join(stack.dir, 'parked');
  const root = join(base, 'root');
  mkdirSync(root, { recursive: true });
  writeFileSync(join(root, 'shared.txt'), 'every parked job asks to chmod this file\n');
  chmodSync(join(root, 'shared.txt'), 0o600);
  const rulesFile = join(base, 'rules.json');
  writeRules(rulesFile, 'approvals');
  const replay = await startReplayServer({ script: { turns: [{ tool_calls: [call('fs_chmod', { path: 'shared.txt', mode: '600' })] }, completeTurn] } });
  const env = partWorkerEnv({ address: stack.server.address, namespace: PARKED_NAMESPACE, base, root, rulesFile, modelUrl: replay.baseUrl });
  const workers = await startWorkerProcesses(env).catch(async (err: unknown) => {
    await replay.close();
    throw err;
  });
  const figures: Figure[] = [];
  const add = (name: string, unit: string, value: number, note?: string, n?: number) =>
    figures.push({ part: 'parked', name, unit, value, ...(n !== undefined ? { n } : {}), ...(note !== undefined ? { note } : {}) });
  let airlock: AirlockClient | undefined;
  try {
    const reviewer = await AirlockClient.connect(parseConfig({ TEMPORAL_ADDRESS: stack.server.address, TEMPORAL_NAMESPACE: PARKED_NAMESPACE }));
    airlock = reviewer;
    const client = reviewer.client;
    const rssIdle = rssBytes(workers.agent.pid);
    // One job parked, approved and completed first, so "before" includes a warmed-up workflow runtime.
    const warm = await startJob(client, 'parked-warm');
    await waitForCount(client, parkedQuery(' AND WorkflowId = "parked-warm"'), 1, 60_000);
    const warmDecision = await reviewer.decide(warm.workflowId, { decision: 'approve', reviewer: 'bench' });
    if (!warmDecision.accepted) throw new Error(`warm-up decision rejected: ${warmDecision.reason}`);
    await completed(client, warm.workflowId);
    await sleep(1000);
    const rssBefore = rssBytes(workers.agent.pid);

    const ids = Array.from({ length: n }, (_, i) => `parked-${i}`);
    // Who spends the CPU while jobs park (two cores: what limits the rate): the Temporal server, the workers, this client.
    const serverPid = stack.server.pid;
    const cpu = () => ({ server: serverPid !== undefined ? cpuSeconds(serverPid) : Number.NaN, agent: cpuSeconds(workers.agent.pid), tools: cpuSeconds(workers.tools.pid), bench: ownCpuSeconds() });
    const cpuBefore = cpu();
    const t0 = performance.now();
    await pool(ids, 50, async (id) => {
      await startJob(client, id);
    });
    const started = performance.now() - t0;
    await waitForCount(client, parkedQuery(), n, Math.max(120_000, n * 500));
    const parkedAll = performance.now() - t0;
    const cpuParked = cpu();
    await sleep(2000);
    const rssParked = rssBytes(workers.agent.pid);
    add('start N jobs (client calls returned)', 's', started / 1000, `N = ${n}, 50 starts in flight`);
    add('start N jobs -> all parked (visibility)', 's', parkedAll / 1000, `${(n / (parkedAll / 1000)).toFixed(0)} jobs/s`);
    for (const [who, what] of [['server', 'the Temporal dev server'], ['agent', 'agent worker'], ['tools', 'tools worker'], ['bench', 'bench client (starts, visibility polls)']] as const) {
      add(`CPU per parked job: ${what}`, 'ms', ((cpuParked[who] - cpuBefore[who]) * 1000) / n, 'while the N jobs parked');
    }
    add('agent worker RSS idle', 'MiB', rssIdle / MiB, 'after start, no job yet');
    add('agent worker RSS before', 'MiB', rssBefore / MiB, 'after one warm-up job');
    add('agent worker RSS with N parked', 'MiB', rssParked / MiB);
    add('agent worker RSS per parked job', 'KiB', (rssParked - rssBefore) / n / 1024, '(with N parked - before) / N');

    const pending: number[] = [];
    for (let i = 0; i < 3; i++) {
      const bin = join(projectRoot(), 'bin', 'airlock.js');
      const run = await timedRun(process.execPath, [bin, 'pending', '--json'], env);
      if (run.code !== 0) throw new Error(`airlock pending --json exited ${run.code}: ${run.stderr.trim()}`);
      const listed: unknown = JSON.parse(run.stdout);
      if (!Array.isArray(listed) || listed.length !== n) throw new Error(`airlock pending --json listed ${Array.isArray(listed) ? listed.length : '?'} jobs, expected ${n}`);
      pending.push(run.ms);
    }
    figures.push({ part: 'parked', name: 'airlock pending --json (N parked)', unit: 's', ...sampled(pending, 1 / 1000), note: 'spawn to exit' });

    // What a reviewer waits for: the first page, one visibility call whatever N is.
    const firstPage: number[] = [];
    for (let i = 0; i < 3; i++) {
      const bin = join(projectRoot(), 'bin', 'airlock.js');
      const run = await timedRun(process.execPath, [bin, 'pending', '--json', '--limit', '50'], env);
      if (run.code !== 0) throw new Error(`airlock pending --json --limit 50 exited ${run.code}: ${run.stderr.trim()}`);
      const page: unknown = JSON.parse(run.stdout);
      const jobs = typeof page === 'object' && page !== null && 'jobs' in page && Array.isArray(page.jobs) ? page.jobs.length : -1;
      if (jobs !== Math.min(n, 50)) throw new Error(`airlock pending --json --limit 50 listed ${jobs} jobs, expected ${Math.min(n, 50)}`);
      firstPage.push(run.ms);
    }
    figures.push({ part: 'parked', name: 'airlock pending --json --limit 50, first page (N parked)', unit: 's', ...sampled(firstPage, 1 / 1000), note: 'spawn to exit' });

    const t1 = performance.now();
    await pool(ids, 20, async (id) => {
      const outcome = await reviewer.decide(id, { decision: 'approve', reviewer: 'bench' });
      if (!outcome.accepted) throw new Error(`${id}: decision rejected: ${outcome.code} ${outcome.reason}`);
    });
    const decided = performance.now() - t1;
    await pool(ids, 50, async (id) => {
      await completed(client, id);
    });
    const done = performance.now() - t1;
    await sleep(2000);
    const rssDone = rssBytes(workers.agent.pid);
    add('approve all (describe + decide update each)', 's', decided / 1000, '20 decisions in flight');
    add('approve all -> all completed', 's', done / 1000, `${(n / (done / 1000)).toFixed(0)} jobs/s`);
    add('agent worker RSS after all completed', 'MiB', rssDone / MiB);

    const sample = ids.filter((_, i) => i % Math.max(1, Math.floor(n / 200)) === 0);
    const troubles = await countTaskTroubles(client, sample);
    add('workflow task timeouts in sampled histories', 'events', troubles.timedOut, `${sample.length} of ${n} histories`, sample.length);
    add('workflow task failures in sampled histories', 'events', troubles.failed, `${sample.length} of ${n} histories`, sample.length);
    const log = workers.agent.output().split('\n').filter((l) => /\b(WARN|ERROR)\b|\[(warn|error)\]/i.test(l));
    add('agent worker warn/error log lines', 'lines', log.length, log[0]?.replace(ANSI, '').slice(0, 80));
    // The table cuts its note short: each kind of line whole, with how often it came, so a timeout's cause can be read.
    const kinds = new Map<string, number>();
    for (const line of log) {
      const text = line.replace(ANSI, '').replace(/^\S*\d{4}-\d\d-\d\dT\S+\s+/, '').slice(0, 400);
      kinds.set(text, (kinds.get(text) ?? 0) + 1);
    }
    for (const [text, count] of [...kinds].slice(0, 10)) process.stderr.write(`bench: parked: agent worker, ${count}x: ${text}\n`);
    return figures;
  } finally {
    await airlock?.close();
    await workers.stop();
    await replay.close();
  }
}
