import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { NativeConnection } from '@temporalio/worker';
import { AirlockClient } from '../../client/airlock-client';
import { startDevServer, type DevServer } from '../../ops/dev/dev-server';
import { freePort } from '../../ops/dev/ports';
import { startReplayServer, type ReplayServer } from '../../ops/dev/replay-server';
import { resolveTemporalCli } from '../../ops/dev/temporal-cli';
import { parseConfig, type AirlockConfig } from '../../core/config/config';
import { queueRoles } from '../../core/temporal/task-queues';
import { dataConverterFor } from '../../host/temporal/data-converter';
import { createModelClient } from '../../host/model-client';
import { Roots } from '../../host/fs/roots';
import { hostsConfigSchema, type HostsConfig } from '../../core/config/tools/hosts';
import { createWorkers } from '../../workers/create-workers';
import { buildActivities } from '../../workers/deps';
import { installBenchRuntime } from './bench-log';
import { createPlainActivities, createPlainWorker } from './plain-worker';
import { writeRules, type RulePreset } from './rules';
import { requireCurrent } from '../../host/temporal/worker-deployments';

/** The namespace of the `parked` part, whose agent worker runs as its own process. */
export const PARKED_NAMESPACE = 'airlock-bench-parked';

/** The namespace of the `stores` part's workers on the PostgreSQL stores. */
export const STORES_NAMESPACE = 'airlock-bench-stores';

/** The namespace of the `throughput` part, whose agent and tools workers run as their own processes. */
export const THROUGHPUT_NAMESPACE = 'airlock-bench-throughput';

/** The process service every bench stack configures (the tools config the workers read). */
export const BENCH_SERVICE = 'bench-svc';

/**
 * One bench run's world: an in-memory dev server on a free port, the replay
 * model, airlock's workers (built the product's way, in this process, on the
 * default namespace), the baseline's worker, and clients.
 */
export interface Stack {
  readonly dir: string;
  /** The tools' only root. */
  readonly root: string;
  /** A local HTTP server the tools config allows (`hosts.allowInternal`), answering every request with a small text. */
  readonly http: { readonly url: string; readonly hosts: HostsConfig; requests(): number };
  readonly server: DevServer;
  readonly temporalCli: string;
  readonly replay: ReplayServer;
  /** The tools config the workers read: one process service, BENCH_SERVICE. */
  readonly toolsConfig: string;
  readonly config: AirlockConfig;
  readonly client: Client;
  readonly airlock: AirlockClient;
  /** Switches the rules of jobs started from now on. */
  useRules(preset: RulePreset): void;
  /** Environment for spawned airlock processes (CLI, workers) on this server. */
  processEnv(extra?: Record<string, string>): NodeJS.ProcessEnv;
  stop(): Promise<void>;
}

export async function startStack(): Promise<Stack> {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-bench-'));
  const removeDir = () => rmSync(dir, { recursive: true, force: true });
  // An interrupted run exits without the async cleanup: the folder still goes.
  process.once('exit', removeDir);
  const cleanups: Array<() => Promise<void> | void> = [removeDir];
  const stop = async () => {
    // Last started, first stopped; every step runs even when one fails.
    for (const cleanup of cleanups.splice(0).reverse()) {
      try {
        await cleanup();
      } catch (err) {
        process.stderr.write(`bench: cleanup: ${err instanceof Error ? err.message : String(err)}\n`);
      }
    }
  };
  try {
    const root = join(dir, 'root');
    mkdirSync(root);
    for (let i = 0; i < 10; i++) writeFileSync(join(root, `f${i}.txt`), `file ${i}\n`);
    const rulesFile = join(dir, 'rules.json');
    writeRules(rulesFile, 'builtIn');
    // One supervised process service, for the `services` part: service_status through the gate vs the adapter directly.
    const services = {
      [BENCH_SERVICE]: { adapter: 'process', command: [process.execPath, '-e', 'setInterval(() => {}, 1 << 30)'], pidFile: join(dir, `${BENCH_SERVICE}.pid`), health: { type: 'pid' } },
    };

    let httpRequests = 0;
    const httpServer = createServer((_req, res) => {
      httpRequests++;
      res.end('ok\n');
    });
    await new Promise<void>((resolve) => httpServer.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise<void>((resolve) => httpServer.close(() => resolve())));
    const http = { url: `http://127.0.0.1:${(httpServer.address() as AddressInfo).port}/status`, hosts: hostsConfigSchema.parse({ allowInternal: ['127.0.0.1'] }), requests: () => httpRequests };

    // The tools config lends the service above and http_request that server only; AIRLOCK_ROOTS keeps the root.
    const toolsConfig = join(dir, 'tools.json');
    writeFileSync(toolsConfig, `${JSON.stringify({ version: 1, services, hosts: { allowInternal: ['127.0.0.1'] } })}\n`);

    const temporalCli = (await resolveTemporalCli()).path;
    const server = await startDevServer({ cli: temporalCli, port: await freePort(), namespaces: [PARKED_NAMESPACE, STORES_NAMESPACE, THROUGHPUT_NAMESPACE] });
    cleanups.push(() => server.stop());
    const replay = await startReplayServer({ script: { turns: [] } });
    cleanups.push(() => replay.close());
    const config = parseConfig({
      TEMPORAL_ADDRESS: server.address,
      AIRLOCK_DATA_DIR: join(dir, 'data'),
      AIRLOCK_ROOTS: root,
      AIRLOCK_RULES_FILE: rulesFile,
      AIRLOCK_TOOLS_CONFIG: toolsConfig,
      OPENAI_BASE_URL: replay.baseUrl,
      AIRLOCK_LOG_LEVEL: 'warn',
    });

    installBenchRuntime();
    const native = await NativeConnection.connect({ address: server.address });
    cleanups.push(() => native.close());
    const { workers, buildId } = await createWorkers({
      connection: native,
      namespace: config.temporal.namespace,
      roles: queueRoles,
      activities: await buildActivities(config, queueRoles),
      concurrency: config.concurrency,
      dataConverter: dataConverterFor(config),
    });
    const plainActivities = createPlainActivities(createModelClient(config.model, config.model.timeoutMs), config.model.name, await Roots.create([root]));
    workers.push(await createPlainWorker(native, plainActivities));
    const running = workers.map((w) =>
      w.run().catch((err: unknown) => process.stderr.write(`bench: a worker stopped: ${err instanceof Error ? err.message : String(err)}\n`)),
    );
    cleanups.push(async () => {
      for (const w of workers) if (w.getState() === 'RUNNING') w.shutdown();
      await Promise.all(running);
    });
    await requireCurrent({ service: native.workflowService, namespace: config.temporal.namespace, buildId });

    // Histories of long jobs with large reads exceed gRPC's default 4 MiB per message.
    const connection = await Connection.connect({ address: server.address, channelArgs: { 'grpc.max_receive_message_length': 256 * 1024 * 1024 } });
    cleanups.push(() => connection.close());
    const airlock = await AirlockClient.connect(config);
    cleanups.push(() => airlock.close());
    return {
      dir,
      root,
      http,
      server,
      temporalCli,
      replay,
      toolsConfig,
      config,
      client: new Client({ connection }),
      airlock,
      useRules: (preset) => writeRules(rulesFile, preset),
      processEnv: (extra = {}) => ({
        PATH: process.env.PATH,
        HOME: process.env.HOME,
        TEMPORAL_ADDRESS: server.address,
        TEMPORAL_NAMESPACE: 'default',
        AIRLOCK_DATA_DIR: join(dir, 'data'),
        ...extra,
      }),
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
