import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { AirlockClient } from '../../client/airlock-client';
import type { AirlockConfig } from '../../core/config/config';
import { dataConverterFor } from '../../host/temporal/data-converter';
import { Database } from '../../host/stores/database/postgres';
import { migrate } from '../../host/stores/database/migrations';
import { createWorkers } from '../../workers/create-workers';
import { buildActivities } from '../../workers/deps';
import { startPrivatePostgres, type PrivatePostgres } from '../../test/helpers/private-postgres';
import { whenGone } from './approval';
import type { BenchOptions } from './args';
import type { Figure } from './figures';
import { approval, call, completeTurn, completed, readBatch, startJob, waitParked } from './jobs';
import { STORES_NAMESPACE, type Stack } from './stack';
import { interleaved, pairedRatios, sleep, sampled } from './stats';
import { requireCurrent } from '../../host/temporal/worker-deployments';

/**
 * What the shared database costs where people wait: the same approved
 * call (decision sent to file gone) and the same allowed call (start to
 * result) on the embedded stores (SQLite files, the JSONL audit log) and on
 * a PostgreSQL database holding every store, interleaved round by round on
 * one dev server. The PostgreSQL is a private server on this machine, so
 * the figures are the stores' own cost, not a network's.
 */

interface Side {
  readonly label: string;
  readonly client: Client;
  readonly airlock: AirlockClient;
}

async function startPostgresSide(stack: Stack, pg: PrivatePostgres, cleanups: Array<() => Promise<void>>): Promise<Side> {
  await pg.sql('CREATE DATABASE airlock');
  const url = pg.url('airlock');
  const db = Database.open(url);
  await migrate(db);
  await db.close();
  const config: AirlockConfig = {
    ...stack.config,
    temporal: { ...stack.config.temporal, namespace: STORES_NAMESPACE },
    dataDir: join(stack.dir, 'data-postgres'),
    database: { url, setting: 'AIRLOCK_DATABASE_URL', poolSize: 4, statementTimeoutMs: 15_000 },
  };
  const native = await NativeConnection.connect({ address: stack.server.address });
  cleanups.push(() => native.close());
  const roles = ['agent', 'tools'] as const;
  const { workers, buildId } = await createWorkers({
    connection: native,
    namespace: STORES_NAMESPACE,
    roles,
    activities: await buildActivities(config, roles),
    concurrency: config.concurrency,
    dataConverter: dataConverterFor(config),
  });
  const running = workers.map((w) => w.run().catch((err: unknown) => process.stderr.write(`bench: a worker stopped: ${err instanceof Error ? err.message : String(err)}\n`)));
  cleanups.push(async () => {
    for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
    await Promise.all(running);
  });
  await requireCurrent({ service: native.workflowService, namespace: STORES_NAMESPACE, buildId });
  const connection = await Connection.connect({ address: stack.server.address });
  cleanups.push(() => connection.close());
  const airlock = await AirlockClient.connect(config);
  cleanups.push(() => airlock.close());
  return { label: 'PostgreSQL', client: new Client({ connection, namespace: STORES_NAMESPACE }), airlock };
}

/** Decision sent to the approved file gone, in ms. */
async function approvedCall(stack: Stack, side: Side, jobId: string): Promise<number> {
  const name = `${jobId}.txt`;
  writeFileSync(join(stack.root, name), 'to be deleted\n');
  stack.replay.setScript({ turns: [{ tool_calls: [call('fs_delete', { path: name })] }, completeTurn] });
  await startJob(side.client, jobId);
  const request = await waitParked(side.client, jobId);
  // A reviewer decides long after the job parked: let its last workflow task finish first.
  await sleep(300);
  const watcher = whenGone(stack.root, name);
  try {
    const t0 = performance.now();
    const outcome = await side.airlock.sendDecision(jobId, approval(request));
    if (!outcome.accepted) throw new Error(`${jobId}: decision rejected: ${outcome.code} ${outcome.reason}`);
    const gone = await watcher.goneWithin(`${jobId}: the approved file`);
    await completed(side.client, jobId);
    return gone - t0;
  } finally {
    watcher.close();
  }
}

/** One model turn with one allowed read, then `complete`: start to result, in ms. */
async function allowedCall(stack: Stack, side: Side, jobId: string): Promise<number> {
  stack.replay.setScript(readBatch(['f0.txt']));
  const t0 = performance.now();
  await startJob(side.client, jobId);
  await completed(side.client, jobId);
  return performance.now() - t0;
}

export async function storesPart(stack: Stack, options: BenchOptions): Promise<Figure[]> {
  const cleanups: Array<() => Promise<void>> = [];
  const pg = await startPrivatePostgres();
  cleanups.push(() => pg.stop());
  try {
    stack.useRules('approvals');
    const sides: Side[] = [{ label: 'SQLite', client: stack.client, airlock: stack.airlock }, await startPostgresSide(stack, pg, cleanups)];
    const id = (what: string, side: number, round: string) => `stores-${what}-${side === 0 ? 'sqlite' : 'postgres'}-${round}`;
    const both = [0, 1];
    // One warm-up round each: pools, caches and statements settle before anything counts.
    await interleaved(both, 1, (s, r) => approvedCall(stack, sides[s]!, id('approved', s, `warm${r}`)));
    const approved = await interleaved(both, options.approvals, (s, r) => approvedCall(stack, sides[s]!, id('approved', s, String(r))));
    await interleaved(both, 1, (s, r) => allowedCall(stack, sides[s]!, id('allowed', s, `warm${r}`)));
    const allowed = await interleaved(both, options.gateRounds, (s, r) => allowedCall(stack, sides[s]!, id('allowed', s, String(r))));
    const row = (name: string, values: number[], note: string, unit = 'ms'): Figure => ({ part: 'stores', name, unit, ...sampled(values), note });
    return [
      ...sides.map((side, s) => row(`decide -> approved file unlinked: ${side.label} stores`, approved[s] ?? [], 'revalidate, grant, consume, execute')),
      row('decide -> unlinked: PostgreSQL / SQLite', pairedRatios(approved[1] ?? [], approved[0] ?? []), 'paired per round', 'ratio'),
      ...sides.map((side, s) => row(`1 allowed read, start to result: ${side.label} stores`, allowed[s] ?? [], 'two model turns, policy, grant, consume, execute, audit')),
      row('allowed read: PostgreSQL / SQLite', pairedRatios(allowed[1] ?? [], allowed[0] ?? []), 'paired per round', 'ratio'),
    ];
  } finally {
    for (const cleanup of cleanups.reverse()) await cleanup().catch(() => undefined);
  }
}
