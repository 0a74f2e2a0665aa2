import { DefaultLogger, NativeConnection, Runtime, type LogLevel } from '@temporalio/worker';
import { createAirlockMetrics, JUDGE_LATENCY_BUCKETS_MS, MetricNames, type AirlockMetrics } from '../activities/metrics';
import type { AirlockConfig } from '../core/config/config';
import { describeError } from '../core/temporal/describe-error';
import { ConfigError } from '../core/util/errors';
import { TaskQueues, toolsQueueFor, type QueueRole } from '../core/temporal/task-queues';
import { requireCodecForRemoteTemporal } from '../host/temporal/locality';
import { connectionOptionsOf, connectTo, temporalTarget } from '../host/temporal/target';
import { enableLinearRegexEngine } from '../host/linear-regex-engine';
import { createWorkers, type BuiltActivities } from './create-workers';
import type { WorkflowSource } from './workflow-code';
import { adoptIfNoCurrent, wakeParked, type WorkflowService } from '../host/temporal/worker-deployments';
import { AGENT_DEPLOYMENT } from '../core/temporal/deployments';
import { dataConverterFor } from '../host/temporal/data-converter';
import { startRetention } from '../host/retention';
import { buildActivities, openAuditSink, openDatabase, openNotifier, retentionTasks, temporalJobs } from './deps';

// The SDK's INFO lines (worker state changes) are noise for operators; airlock's own lines say what matters.
const levels: Record<AirlockConfig['logLevel'], LogLevel> = { error: 'ERROR', warn: 'WARN', info: 'WARN', debug: 'DEBUG' };

// Expected for the tools and judge workers, which host activities only.
const expectedWarnings = [/^No workflows registered/, /^No Nexus services registered/];

/** The SDK's logger at airlock's level, without the warnings every activity-only worker prints. */
export function runtimeLogger(level: AirlockConfig['logLevel']): DefaultLogger {
  return new DefaultLogger(levels[level], (entry) => {
    if (expectedWarnings.some((re) => re.test(entry.message))) return;
    const meta = entry.meta === undefined || Object.keys(entry.meta).length === 0 ? '' : ` ${JSON.stringify(entry.meta)}`;
    process.stderr.write(`${new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString()} [${entry.level}] ${entry.message}${meta}\n`);
  });
}

let runtimeInstalled = false;

/** The SDK's shutdown signals, and SIGHUP: a closed terminal stops workers as Ctrl-C does. */
const SHUTDOWN_SIGNALS: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGQUIT', 'SIGUSR2', 'SIGHUP'];

/**
 * Installs the Temporal runtime once per process; SIGINT/SIGTERM/SIGHUP then shut
 * workers down gracefully. With `AIRLOCK_METRICS_ADDRESS` it serves
 * Prometheus metrics there: the SDK's own and airlock's, one endpoint for
 * every worker of the process.
 */
export function installRuntime(config: AirlockConfig): void {
  if (runtimeInstalled) return;
  const address = config.metrics.address;
  const telemetryOptions =
    address === undefined
      ? {}
      : { telemetryOptions: { metrics: { prometheus: { bindAddress: address, histogramBucketOverrides: { [MetricNames.judgeLatency]: JUDGE_LATENCY_BUCKETS_MS } } } } };
  try {
    Runtime.install({ logger: runtimeLogger(config.logLevel), shutdownSignals: SHUTDOWN_SIGNALS, ...telemetryOptions });
  } catch (err) {
    // The address was well-formed (checked at start-up); binding it failed, e.g. the port is taken.
    if (address === undefined) throw err;
    throw new ConfigError([{ variable: 'AIRLOCK_METRICS_ADDRESS', message: `cannot serve metrics on ${address}: ${describeError(err)}` }]);
  }
  runtimeInstalled = true;
}

/** What the activities count into: the runtime's meter when it serves metrics, else nothing. */
function metricsFor(config: AirlockConfig): AirlockMetrics | undefined {
  if (config.metrics.address === undefined) return undefined;
  const namespace = config.temporal.namespace;
  return createAirlockMetrics(() => Runtime.instance().metricMeter.withTags({ namespace }));
}

export interface RunWorkersOptions {
  readonly config: AirlockConfig;
  readonly roles: readonly QueueRole[];
  /** Defaults to activities built from `config`. */
  readonly activities?: BuiltActivities;
  readonly workflowSource?: WorkflowSource;
  readonly log?: (line: string) => void;
  /**
   * `first-install` (default): the agent worker makes its build current only
   * when none is. `this-build`: it makes its own build current whatever was
   * (`airlock dev`, whose server runs one build at a time).
   */
  readonly currentBuild?: 'first-install' | 'this-build';
  /** Called once every worker is polling. */
  readonly onReady?: () => void;
  /** Stops the workers (gracefully) when aborted, also before they run. */
  readonly signal?: AbortSignal;
}

/** Runs the workers of the given queues until the process is asked to stop. */
export async function runWorkers(options: RunWorkersOptions): Promise<void> {
  const { config, roles } = options;
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  enableLinearRegexEngine();
  const target = temporalTarget(config);
  requireCodecForRemoteTemporal(config, target.address);
  // Notifications are sent by the agent worker, from the events its audit activity writes.
  const building = options.activities === undefined;
  const db = building && (roles.includes('agent') || roles.includes('tools')) ? await openDatabase(config) : undefined;
  const audit = building && roles.includes('agent') ? openAuditSink(config, db) : undefined;
  const notifier = audit === undefined ? undefined : openNotifier(config, audit, db);
  const activities = options.activities ?? (await buildActivities(config, roles, metricsFor(config), { db, ...(audit !== undefined ? { audit, notifier } : {}) }));
  const jobs = building && roles.includes('agent') ? temporalJobs(config) : undefined;
  const retention = building ? startRetention(retentionTasks(config, roles, db, audit, jobs), { log }) : undefined;
  installRuntime(config);
  if (config.metrics.address !== undefined) log(`airlock: Prometheus metrics on http://${config.metrics.address}/metrics`);
  const connection = await connectTo(target, () => NativeConnection.connect(connectionOptionsOf(target)));
  try {
    const { workers, buildId } = await createWorkers({
      connection,
      namespace: target.namespace,
      roles,
      activities,
      concurrency: config.concurrency,
      dataConverter: dataConverterFor(config),
      workflows: config.workflows,
      ...(config.machine !== undefined ? { machine: config.machine } : {}),
      ...(options.workflowSource !== undefined ? { workflowSource: options.workflowSource } : {}),
      ...(config.buildId !== undefined ? { buildId: config.buildId } : {}),
    });
    log(
      `airlock: workers polling ${roles.map((r) => (r === 'tools' ? toolsQueueFor(config.machine) : TaskQueues[r])).join(', ')} on ${target.address} (namespace ${target.namespace}), build ${buildId}`,
    );
    if (options.signal?.aborted === true) return;
    const running = Promise.all(workers.map((w) => w.run()));
    const stop = () => {
      for (const w of workers) {
        // A worker already stopping (a signal reached the runtime too) refuses a second shutdown.
        if (w.getState() === 'RUNNING') w.shutdown();
      }
    };
    options.signal?.addEventListener('abort', stop, { once: true });
    if (roles.includes('agent')) await adoptBuild(connection.workflowService, target.namespace, buildId, options.currentBuild ?? 'first-install', log);
    if (notifier !== undefined) {
      notifier.start();
      log(`airlock: notifications to ${config.notify.endpoints.map((e) => e.shown).join(', ')}`);
    }
    options.onReady?.();
    try {
      await running;
    } finally {
      options.signal?.removeEventListener('abort', stop);
    }
    log('airlock: workers stopped');
  } finally {
    retention?.stop();
    await jobs?.close();
    await notifier?.stop();
    await connection.close();
  }
}

/**
 * Versioned pollers get no task until their build is current: a first
 * install makes its own build current; a later build waits for
 * `airlock deploy promote`, and says so.
 */
async function adoptBuild(service: WorkflowService, namespace: string, buildId: string, mode: 'first-install' | 'this-build', log: (line: string) => void): Promise<void> {
  try {
    const identity = `airlock worker ${buildId}`;
    const adopted = await adoptIfNoCurrent({ service, namespace, buildId, identity, replace: mode === 'this-build' });
    if (adopted.kind === 'made_current' && adopted.previous !== undefined) {
      log(`airlock: build ${buildId} is now current (was ${adopted.previous})`);
      const woken = await wakeParked({ service, namespace, buildId, identity });
      if (woken.selected > 0) {
        log(
          `airlock: woke ${woken.selected} parked job(s) of older builds: they continue on this build where the server can move them (1.32 and later); on an older server they wait for their own build's agent worker (airlock deploy status; airlock cancel JOB ends one)`,
        );
      }
    } else if (adopted.kind === 'current' && adopted.buildId !== buildId) {
      log(`airlock: build ${adopted.buildId} is current, so new jobs start there; this worker serves the jobs pinned to build ${buildId}. To move to this build: airlock deploy promote ${buildId}`);
    } else if (adopted.kind === 'not_registered') {
      log(`airlock: the server has not registered build ${buildId} yet; no job starts on it until it is current (see airlock deploy status)`);
    }
  } catch (err) {
    log(`airlock: cannot read or set the current build of the ${AGENT_DEPLOYMENT} deployment: ${describeError(err)}; new jobs wait until a build is current (airlock deploy promote ${buildId})`);
  }
}
