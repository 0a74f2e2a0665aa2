import { existsSync, mkdirSync } from 'node:fs';
import { AesGcmCodec, ensureCodecKeys, loadCodecKeys } from '../../host/temporal/payload-codec';
import { loadOrCreateCodecToken, startCodecServer } from '../../servers/codec/codec-server';
import type { AirlockConfig } from '../../core/config/config';
import { queueRoles } from '../../core/temporal/task-queues';
import { statePaths } from '../../host/config/paths';
import { ensureLocalReviewer } from '../../host/keys/reviewer-identity';
import { ReviewerNameError, type ReviewerKeyPaths } from '../../host/keys/reviewer-key-file';
import { runWorkers } from '../../workers/run-workers';
import { AirlockClient } from '../../client/airlock-client';
import { UsageError } from '../../client/errors';
import { DEMO_GOAL, demoScript, seedDemoFiles } from './demo';
import { startDevServer, type DevServer } from './dev-server';
import { lockDataDir } from './data-lock';
import { loadReplayScript, startReplayServer, type ReplayServer } from './replay-server';
import { stopLeftoverServer } from './server-pid-file';
import { resolveTemporalCli } from './temporal-cli';
import { loadToolsSetup } from '../../host/config/tools-config-file';
import { watchJobs } from '../../client/progress/watch-jobs';
import { progressLine } from '../../core/reviewer/progress';
import { describeError } from '../../core/temporal/describe-error';
import { cliName } from '../../client/cli-name';
import { startInboxServer, type InboxServer } from '../../servers/inbox/inbox-server';
import { inboxSite } from '../../servers/inbox/site';

export interface DevStackOptions {
  readonly config: AirlockConfig;
  /** Start the demo job once everything runs. */
  readonly demo: boolean;
  /** Turn payload encryption on (creates the codec keys); once on, it stays on for this data folder. */
  readonly codec?: boolean;
  readonly requester: string;
  readonly log: (line: string) => void;
  /** Where the approval inbox listens (default: AIRLOCK_INBOX_LISTEN, else 127.0.0.1:7244). */
  readonly inboxListen?: string;
}

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]']);

/** Ctrl-C, `kill`, and a closed terminal: each stops the stack and everything it started. */
const STOP_SIGNALS: readonly NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];

/**
 * The embedded default: a Temporal dev server on a persistent SQLite file,
 * the replay model when no endpoint is configured, and every worker in this
 * process. The data folder is locked while it runs. Ctrl-C, SIGTERM or
 * SIGHUP stop the workers, then the model, then the server.
 */
export async function runDevStack(options: DevStackOptions): Promise<number> {
  const { log } = options;
  const stop = new AbortController();
  // Installed first: a signal during start-up stops what has started so far, never leaves it running.
  const onSignal = (signal: NodeJS.Signals) => {
    if (!stop.signal.aborted) log(`airlock: ${signal}: stopping the dev stack`);
    stop.abort();
  };
  for (const s of STOP_SIGNALS) process.on(s, onSignal);
  try {
    return await runLocked(options, stop);
  } finally {
    for (const s of STOP_SIGNALS) process.off(s, onSignal);
  }
}

async function runLocked(options: DevStackOptions, stop: AbortController): Promise<number> {
  const address = options.config.temporal.address;
  const host = address.slice(0, address.lastIndexOf(':'));
  if (!LOOPBACK.has(host)) {
    throw new UsageError(`airlock dev runs a local server; TEMPORAL_ADDRESS must be on 127.0.0.1 or localhost (got ${address})`);
  }
  const paths = statePaths(options.config);
  mkdirSync(paths.dataDir, { recursive: true, mode: 0o700 });
  const lock = lockDataDir(paths.dataDir);
  try {
    return await runStack(options, stop, paths);
  } finally {
    lock.release();
  }
}

async function runStack(options: DevStackOptions, stop: AbortController, paths: ReturnType<typeof statePaths>): Promise<number> {
  const { log } = options;
  const address = options.config.temporal.address;
  const host = address.slice(0, address.lastIndexOf(':'));
  const port = Number(address.slice(address.lastIndexOf(':') + 1));
  const leftover = await stopLeftoverServer(paths.temporalPid);
  if (leftover.kind === 'stopped') {
    log(`airlock: stopped the Temporal dev server (pid ${leftover.pid}, ${leftover.address}) that an earlier airlock dev on this data folder left running`);
  }
  ensureReviewer(paths, options.requester, log);
  const cli = await resolveTemporalCli({ log });
  log(`airlock: Temporal CLI ${cli.path} (${cli.source})`);
  // Asked to stop while the CLI was found or built: nothing runs yet.
  if (stop.signal.aborted) return 0;
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
    pidFile: paths.temporalPid,
    logFile: paths.temporalLog,
    ...(codec !== undefined ? { uiCodecEndpoint: codec.endpoint } : {}),
  }).catch(async (err: unknown) => {
    await codec?.close();
    throw err;
  });
  let replay: ReplayServer | undefined;
  let inbox: InboxServer | undefined;
  let stopping = false;
  let crashed = false;
  let watching: Promise<void> | undefined;
  try {
    if (stop.signal.aborted) return 0;
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
    inbox = await startInbox(config, options);
    if (inbox !== undefined && config.notify.approvalPageUrl === undefined) {
      // Notifications link to the page this stack serves.
      config = { ...config, notify: { ...config.notify, approvalPageUrl: inbox.url } };
    }
    const tools = await loadToolsSetup(config);
    if (config.roots === undefined && tools.config?.roots === undefined) mkdirSync(paths.sandbox, { recursive: true, mode: 0o700 });
    const demoFolder = options.demo ? await seedDemoFiles(tools.roots[0]!) : undefined;

    void server.exited.then((code) => {
      if (stopping) return;
      crashed = true;
      log(`airlock: the Temporal dev server exited unexpectedly (code ${String(code)}); stopping`);
      stop.abort();
    });

    if (stop.signal.aborted) return 0;
    await runWorkers({
      config,
      roles: queueRoles,
      log,
      signal: stop.signal,
      // The dev server runs one build: this one, also after an upgrade of the data folder's earlier runs.
      currentBuild: 'this-build',
      onReady: () => {
        watching = watchProgress(config, log, stop.signal);
        log(
          [
            '',
            'airlock dev is running',
            `  Temporal gRPC   ${server.address} (namespace ${config.temporal.namespace})`,
            `  Web UI          ${server.uiUrl ?? '(headless)'}`,
            `  Approval page   ${inbox === undefined ? 'not served (see above)' : `${inbox.url} (register a passkey: npx airlock reviewer add NAME --passkey)`}`,
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
    // The workers have stopped; the watch ends with them.
    stop.abort();
    await watching;
    await replay?.close();
    await inbox?.close();
    await codec?.close();
    await server.stop();
    log('airlock: dev stack stopped');
  }
}

/** The approval inbox in this process; a port in use costs the page, not the stack. */
async function startInbox(config: AirlockConfig, options: DevStackOptions): Promise<InboxServer | undefined> {
  const site = inboxSite(config, options.inboxListen);
  try {
    return await startInboxServer({ config, site, cli: cliName(), log: options.log });
  } catch (err) {
    options.log(`airlock: the approval page is not served: cannot listen on ${site.listen} (${describeError(err)}); set AIRLOCK_INBOX_LISTEN or --inbox-listen to a free port`);
    return undefined;
  }
}

/** One line per event of every job, for as long as the stack runs. */
async function watchProgress(config: AirlockConfig, log: (line: string) => void, signal: AbortSignal): Promise<void> {
  let client: AirlockClient;
  try {
    client = await AirlockClient.connect(config);
  } catch (err) {
    log(`airlock: cannot follow the jobs' progress: ${describeError(err)}`);
    return;
  }
  try {
    await watchJobs({
      client: client.client,
      signal,
      onEvent: (jobId, event) => log(progressLine(jobId, event)),
      onError: (jobId, err) => log(`airlock: stopped following ${jobId}: ${describeError(err)}`),
    });
  } finally {
    await client.close();
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
