import Long from 'long';
import { randomUUID } from 'node:crypto';
import { Client, Connection } from '@temporalio/client';
import type { DataConverter } from '@temporalio/common';
import { NativeConnection, Runtime, type Worker } from '@temporalio/worker';
import type { Activities } from '../../activities';
import type { QueueRole } from '../../core/temporal/task-queues';
import { createWorkers } from '../../workers/create-workers';
import { runtimeLogger } from '../../workers/run-workers';
import { ensureSearchAttributes } from '../../ops/temporal/search-attributes';
import { requireCurrent } from '../../host/temporal/worker-deployments';

function required(name: string): string {
  const value = process.env[name];
  if (value === undefined) throw new Error(`${name} is not set: run the tests with jest's global setup (npm test)`);
  return value;
}

export const testServer = {
  get address() {
    return required('AIRLOCK_TEST_TEMPORAL_ADDRESS');
  },
  get cli() {
    return required('AIRLOCK_TEST_TEMPORAL_CLI');
  },
  /** The bundle replays use (failure messages encoded; replay reads either form). */
  get bundle() {
    return required('AIRLOCK_TEST_WORKFLOW_BUNDLE');
  },
  /** Both prebuilt bundles: workers take the one matching their codec. */
  get bundles() {
    return { encoded: required('AIRLOCK_TEST_WORKFLOW_BUNDLE'), plain: required('AIRLOCK_TEST_WORKFLOW_BUNDLE_PLAIN') };
  },
};

let runtimeReady = false;

export function ensureRuntime(): void {
  if (runtimeReady) return;
  try {
    // Core's own lines (e.g. the nondeterminism a replay test provokes on purpose) only at ERROR.
    Runtime.install({ logger: runtimeLogger('error'), shutdownSignals: [], telemetryOptions: { logging: { filter: { core: 'ERROR', other: 'ERROR' } } } });
  } catch {
    // Already installed in this process by an earlier test file.
  }
  runtimeReady = true;
}

export interface TestEnv {
  readonly namespace: string;
  readonly address: string;
  readonly client: Client;
  readonly connection: Connection;
  readonly nativeConnection: NativeConnection;
  close(): Promise<void>;
}

/** A fresh namespace on the shared dev server, with airlock's search attributes. */
export async function createTestEnv(): Promise<TestEnv> {
  ensureRuntime();
  const address = testServer.address;
  const namespace = `airlock-test-${randomUUID().slice(0, 8)}`;
  const connection = await Connection.connect({ address });
  await connection.workflowService.registerNamespace({ namespace, workflowExecutionRetentionPeriod: { seconds: Long.fromNumber(86_400) } });
  for (let i = 0; ; i++) {
    try {
      await connection.workflowService.describeNamespace({ namespace });
      await ensureSearchAttributes(connection, namespace);
      break;
    } catch (err) {
      if (i > 100) throw err;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const nativeConnection = await NativeConnection.connect({ address });
  return {
    namespace,
    address,
    client: new Client({ connection, namespace }),
    connection,
    nativeConnection,
    async close() {
      await nativeConnection.close();
      await connection.close();
    },
  };
}

export interface RunningWorkers {
  readonly workers: readonly Worker[];
  stop(): Promise<void>;
}

/** In-process workers for the given queues, built the product's way from the test's own activities. */
export async function startWorkers(
  env: TestEnv,
  roles: readonly QueueRole[],
  activities: Activities,
  options: { readonly dataConverter?: DataConverter; readonly workflowCache?: number } = {},
): Promise<RunningWorkers> {
  const { workers, buildId } = await createWorkers({
    ...(options.dataConverter !== undefined ? { dataConverter: options.dataConverter } : {}),
    ...(options.workflowCache !== undefined ? { workflows: { cacheSize: options.workflowCache, concurrency: 10, stickyTimeoutMs: 5_000 } } : {}),
    connection: env.nativeConnection,
    namespace: env.namespace,
    roles,
    activities,
    concurrency: { agent: 10, tools: 4, judge: 2 },
    workflowSource: { bundles: testServer.bundles },
  });
  const running = workers.map((w) => w.run());
  // Only the agent worker is versioned: the namespace is the test's own, so its build becomes current.
  if (roles.includes('agent')) await requireCurrent({ service: env.nativeConnection.workflowService, namespace: env.namespace, buildId });
  return {
    workers,
    async stop() {
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      await Promise.allSettled(running);
    },
  };
}
