import { existsSync, mkdirSync } from 'node:fs';
import { AesGcmCodec, ensureCodecKeys, loadCodecKeys } from '../../host/payload-codec';
import { loadOrCreateCodecToken, startCodecServer } from './codec-server';
import { Runtime } from '@temporalio/worker';
import type { AirlockConfig } from '../../core/config';
import { queueRoles } from '../../core/task-queues';
import { statePaths } from '../../host/paths';
import { ensureLocalReviewer } from '../../host/reviewer-identity';
import { ReviewerNameError, type ReviewerKeyPaths } from '../../host/reviewer-key-file';
import { runWorkers } from '../../workers/run-workers';
import { AirlockClient } from '../airlock-client';
import { UsageError } from '../errors';
import { DEMO_GOAL, demoScript, seedDemoFiles } from './demo';
import { startDevServer, type DevServer } from './dev-server';
import { loadReplayScript, startReplayServer, type ReplayServer } from './replay-server';
import { resolveTemporalCli } from './temporal-cli';
import { loadToolsSetup } from '../../host/tools-config-file';

export interface DevStackOptions {
  readonly config: AirlockConfig;
  /** Start the demo job once everything runs. */
  readonly demo: boolean;
  /** Turn payload encryption on (creates the codec keys); once on, it stays on for this data folder. */
  readonly codec?: boolean;
  readonly requester: string;
  readonly log: (line: string) => void;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/**
 * The embedded default: a Temporal dev server on a persistent SQLite file,
 * the replay model when no endpoint is configured, and every worker in this
 * process. Ctrl-C stops the workers, then the model, then the server.
 */
export async function runDevStack(options: DevStackOptions): Promise<number> {
  const { log } = options;
  const address = options.config.temporal.address;
  const host = address.slice(0, address.lastIndexOf(':'));
  const port = Number(address.slice(address.lastIndexOf(':') + 1));
  if (!LOOPBACK.has(host)) {
    throw new UsageError(`airlock dev runs a local server; TEMPORAL_ADDRESS must be on 127.0.0.1 or localhost (got ${address})`);
  }
  const paths = statePaths(options.config);
  mkdirSync(paths.dataDir, { recursive: true, mode: 0o700 });
  ensureReviewer(paths, options.requester, log);
  const cli = await resolveTemporalCli({ log });
  log(`airlock: Temporal CLI ${cli.path} (${cli.source})`);
  if (options.codec === true && ensureCodecKeys(paths.codecKeys).created) {
    log(`airlock: created payload encryption keys ${paths.codecKeys}; history on the server holds no plaintext from now on`);
  }
  // The codec is on whenever its keys exist: the Web UI then gets a codec server to decode with.
  const codec = existsSync(paths.codecKeys)
    ? await startCodecServer({
        codec: new AesGcmCodec(loadCodecKeys(paths.codecKeys)),
        token: loadOrCreateCodecToken(paths.codecToken),
        port: options.config.codec.port,
        origins: [`http://127.0.0.1:${options.config.dev.uiPort}`, `http://localhost:${options.config.dev.uiPort}`],
      })
    : undefined;

  const server: DevServer = await startDevServer({
    cli: cli.path,
    ip: host === 'localhost' ? '127.0.0.1' : host.replace(/^\[|\]$/g, ''),
    port,
    uiPort: options.config.dev.uiPort,
    dbFile: paths.temporalDb,
    namespaces: [options.config.temporal.namespace],
    ownProcessGroup: true,
    ...(codec !== undefined ? { uiCodecEndpoint: codec.endpoint } : {}),
  }).catch(async (err: unknown) => {
    await codec?.close();
    throw err;
  });
  let replay: ReplayServer | undefined;
  let stopping = false;
  let crashed = false;
  try {
    let config = options.config;
    let modelNote = `${config.model.baseUrl} (model ${config.model.name})`;
    if (config.model.baseUrl === undefined) {
      const scriptFile = config.dev.replayScript;
      replay = await startReplayServer({ script: scriptFile === undefined ? demoScript : await loadReplayScript(scriptFile) });
      config = {
        ...config,
        model: { ...config.model, baseUrl: replay.baseUrl },
        judge: { ...config.judge, baseUrl: config.judge.baseUrl ?? replay.baseUrl },
      };
      modelNote = `${replay.baseUrl} (local replay server, script: ${scriptFile ?? 'built-in demo'})`;
    }
    const tools = await loadToolsSetup(config);
    if (config.roots === undefined && tools.config?.roots === undefined) mkdirSync(paths.sandbox, { recursive: true, mode: 0o700 });
    const demoFolder = options.demo ? await seedDemoFiles(tools.roots[0]!) : undefined;

    void server.exited.then((code) => {
      if (stopping) return;
      crashed = true;
      log(`airlock: the Temporal dev server exited unexpectedly (code ${String(code)}); stopping`);
      void Runtime.instance().shutdown();
    });

    await runWorkers({
      config,
      roles: queueRoles,
      log,
      onReady: () => {
        log(
          [
            '',
            'airlock dev is running',
            `  Temporal gRPC   ${server.address} (namespace ${config.temporal.namespace})`,
            `  Web UI          ${server.uiUrl ?? '(headless)'}`,
            `  Model endpoint  ${modelNote}`,
            `  Tools roots     ${tools.roots.join(', ')}`,
            `  Tools config    ${tools.file ?? 'none (file tools only; AIRLOCK_TOOLS_CONFIG adds services, hosts, commands)'}`,
            `  Payloads        ${codec === undefined ? 'plain JSON (airlock dev --codec encrypts them)' : `encrypted; the Web UI decodes through the codec server on port ${options.config.codec.port}`}`,
            `  Data            ${paths.dataDir}`,
            '  Start a job:    npx airlock run --goal "…"      Stop: Ctrl-C',
            '',
          ].join('\n'),
        );
        if (demoFolder !== undefined) void startDemo(config, server, options, demoFolder);
      },
    });
    return crashed ? 1 : 0;
  } finally {
    stopping = true;
    await replay?.close();
    await codec?.close();
    await server.stop();
    log('airlock: dev stack stopped');
  }
}

async function startDemo(config: AirlockConfig, server: DevServer, options: DevStackOptions, folder: string): Promise<void> {
  const jobId = `demo-${new Date().toISOString().replace(/[:.]/g, '-')}`;
  try {
    const client = await AirlockClient.connect(config);
    try {
      await client.startJob({ jobId, goal: DEMO_GOAL, requester: options.requester });
    } finally {
      await client.close();
    }
    options.log(
      [
        `Demo job ${jobId} started on ${folder}.`,
        'In a moment it parks on an approval to delete airlock-demo/old-backup.tar. In another terminal:',
        '  npx airlock pending                 # what is waiting, with the file\'s observed state',
        `  npx airlock approve ${jobId}   # or: npx airlock deny ${jobId} --reason "keep it"`,
        `  npx airlock show ${jobId}`,
        `Web UI: ${server.uiUrl ?? ''}/namespaces/${config.temporal.namespace}/workflows/${jobId}`,
      ].join('\n'),
    );
  } catch (err) {
    options.log(`airlock: could not start the demo job: ${(err as Error).message}`);
  }
}

/** The local user can decide from this machine: their decisions are signed with a key made here on first use. */
function ensureReviewer(paths: ReviewerKeyPaths, reviewer: string, log: (line: string) => void): void {
  try {
    const { keyFile, created } = ensureLocalReviewer(paths, reviewer);
    if (created) log(`airlock: created the signing key of reviewer ${reviewer} (${keyFile}); \`npx airlock approve\` signs with it`);
  } catch (err) {
    if (!(err instanceof ReviewerNameError)) throw err;
    log(`airlock: ${err.message}; decisions from this machine cannot be signed`);
  }
}
