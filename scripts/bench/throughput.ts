import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { startReplayServer } from '../../ops/dev/replay-server';
import { parseConfig } from '../../core/config/config';
import { COMPLETE_TOOL, sideEffectToolNames } from '../../core/tools/registry';
import { AirlockClient } from '../../client/airlock-client';
import type { BenchOptions } from './args';
import type { Figure } from './figures';
import { completed, pool, readTurns, startJob } from './jobs';
import { PLAIN_WORKFLOW, type PlainAgentInput } from './plain-workflow';
import { PLAIN_TASK_QUEUE } from './plain-worker';
import { writeRules } from './rules';
import { THROUGHPUT_NAMESPACE, type Stack } from './stack';
import { cpuSeconds, ownCpuSeconds } from './processes';
import { pairedRatios, summary } from './stats';
import { countTaskTroubles } from './task-troubles';
import { partWorkerEnv, startWorkerProcesses } from './worker-processes';

/**
 * Many active jobs at once: N jobs of C allowed reads each (one read per
 * model turn), all started together, through airlock (its agent and tools
 * workers as their own processes, built-in rules, own namespace) and as
 * the plain workflow (its worker in the bench process), interleaved round
 * by round. Calls per second from the first start to the last result, and
 * the CPU each side spent per call.
 */

interface Round {
  readonly ms: number;
  /** CPU seconds per process of the side that ran. */
  readonly cpu: Readonly<Record<string, number>>;
}

export async function throughputPart(stack: Stack, options: BenchOptions): Promise<Figure[]> {
  const jobs = options.throughputJobs;
  const calls = options.throughputCalls;
  const script = readTurns(calls, (i) => `f${i % 10}.txt`);
  const base = join(stack.dir, 'throughput');
  const root = join(base, 'root');
  mkdirSync(root, { recursive: true });
  for (let i = 0; i < 10; i++) writeFileSync(join(root, `f${i}.txt`), `file ${i}\n`);
  const rulesFile = join(base, 'rules.json');
  writeRules(rulesFile, 'builtIn');
  const replay = await startReplayServer({ script });
  const env = partWorkerEnv({ address: stack.server.address, namespace: THROUGHPUT_NAMESPACE, base, root, rulesFile, modelUrl: replay.baseUrl });
  const workers = await startWorkerProcesses(env).catch(async (err: unknown) => {
    await replay.close();
    throw err;
  });
  let airlock: AirlockClient | undefined;
  try {
    const client = (airlock = await AirlockClient.connect(parseConfig({ TEMPORAL_ADDRESS: stack.server.address, TEMPORAL_NAMESPACE: THROUGHPUT_NAMESPACE }))).client;
    const lastIds: string[] = [];

    const runAirlock = async (tag: string, n = jobs): Promise<Round> => {
      const ids = Array.from({ length: n }, (_, i) => `throughput-${tag}-${i}`);
      const before = { agent: cpuSeconds(workers.agent.pid), tools: cpuSeconds(workers.tools.pid), bench: ownCpuSeconds() };
      const t0 = performance.now();
      await pool(ids, jobs, async (id) => {
        await startJob(client, id);
      });
      await pool(ids, jobs, async (id) => {
        await completed(client, id);
      });
      const ms = performance.now() - t0;
      lastIds.splice(0, lastIds.length, ...ids);
      return {
        ms,
        cpu: { agent: cpuSeconds(workers.agent.pid) - before.agent, tools: cpuSeconds(workers.tools.pid) - before.tools, bench: ownCpuSeconds() - before.bench },
      };
    };

    const runPlain = async (tag: string, n = jobs): Promise<Round> => {
      stack.replay.setScript(script);
      const input: PlainAgentInput = { goal: 'bench throughput', toolNames: [...sideEffectToolNames, COMPLETE_TOOL], maxTurns: calls + 5 };
      const ids = Array.from({ length: n }, (_, i) => `throughput-plain-${tag}-${i}`);
      const before = ownCpuSeconds();
      const t0 = performance.now();
      const handles = await Promise.all(ids.map((id) => stack.client.workflow.start(PLAIN_WORKFLOW, { taskQueue: PLAIN_TASK_QUEUE, workflowId: id, args: [input] })));
      await Promise.all(handles.map((h) => h.result()));
      return { ms: performance.now() - t0, cpu: { bench: ownCpuSeconds() - before } };
    };

    // One small warm-up of each side: bundles, caches and connections settle before anything counts.
    await runAirlock('warm', Math.min(jobs, 10));
    await runPlain('warm', Math.min(jobs, 10));
    const airlockRounds: Round[] = [];
    const plainRounds: Round[] = [];
    for (let round = 0; round < options.throughputRounds; round++) {
      // Alternating which side goes first, so neither always runs after the other's load.
      if (round % 2 === 0) {
        airlockRounds.push(await runAirlock(String(round)));
        plainRounds.push(await runPlain(String(round)));
      } else {
        plainRounds.push(await runPlain(String(round)));
        airlockRounds.push(await runAirlock(String(round)));
      }
    }

    const total = jobs * calls;
    const rate = (r: Round) => total / (r.ms / 1000);
    const perCall = (rounds: readonly Round[], proc: string) => summary(rounds.map((r) => ((r.cpu[proc] ?? Number.NaN) * 1000) / total)).median;
    const shape = `${jobs} jobs x ${calls} allowed reads`;
    const figures: Figure[] = [];
    const a = summary(airlockRounds.map(rate));
    const p = summary(plainRounds.map(rate));
    figures.push({ part: 'throughput', name: `${shape}: plain workflow`, unit: 'calls/s', value: p.median, n: p.n, note: 'first start to last result' });
    figures.push({ part: 'throughput', name: `${shape}: airlock`, unit: 'calls/s', value: a.median, n: a.n, note: 'first start to last result' });
    const ratio = summary(
      pairedRatios(
        airlockRounds.map((r) => 1 / r.ms),
        plainRounds.map((r) => 1 / r.ms),
      ),
    );
    figures.push({ part: 'throughput', name: `${shape}: airlock / plain, calls per second`, unit: 'ratio', value: ratio.median, n: ratio.n, note: 'paired per round' });
    figures.push({ part: 'throughput', name: 'airlock agent worker CPU per call', unit: 'ms', value: perCall(airlockRounds, 'agent'), note: 'its own process' });
    figures.push({ part: 'throughput', name: 'airlock tools worker CPU per call', unit: 'ms', value: perCall(airlockRounds, 'tools'), note: 'its own process' });
    figures.push({ part: 'throughput', name: 'bench process CPU per call while airlock ran', unit: 'ms', value: perCall(airlockRounds, 'bench'), note: 'the starting and waiting client' });
    figures.push({ part: 'throughput', name: 'plain worker CPU per call', unit: 'ms', value: perCall(plainRounds, 'bench'), note: 'worker and client, one process' });
    const troubles = await countTaskTroubles(client, lastIds);
    figures.push({ part: 'throughput', name: 'airlock workflow task timeouts', unit: 'events', value: troubles.timedOut, n: lastIds.length, note: 'in the last round’s histories' });
    figures.push({ part: 'throughput', name: 'airlock workflow task failures', unit: 'events', value: troubles.failed, n: lastIds.length, note: 'in the last round’s histories' });
    return figures;
  } finally {
    await airlock?.close();
    await workers.stop();
    await replay.close();
  }
}
