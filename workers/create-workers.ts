import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { DataConverter } from '@temporalio/common';
import type { AirlockConfig } from '../core/config/config';
import { Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { plainFailureConverterPath } from '../host/data-converter';
import { bundleFiles, failureMessagesOf, workflowBundleOptions, type FailureMessages } from './workflow-bundle';
import type { Activities } from '../activities';
import { TaskQueues, toolsQueueFor, type QueueRole } from '../core/temporal/task-queues';

export type BuiltActivities = Activities;

/**
 * Where the agent worker loads workflow code from: the prebuilt bundles when
 * `npm run build` made them (the worker takes the one whose failure messages
 * match its codec), or the sources, bundled at start.
 */
export type WorkflowSource = { readonly bundles: Readonly<Record<FailureMessages, string>> } | { readonly workflowsPath: string };

export function defaultWorkflowSource(): WorkflowSource {
  const dist = join(__dirname, '..');
  const bundles = { encoded: join(dist, bundleFiles.encoded), plain: join(dist, bundleFiles.plain) };
  if (__dirname.includes(`${join('dist', 'workers')}`) && existsSync(bundles.encoded) && existsSync(bundles.plain)) return { bundles };
  return { workflowsPath: require.resolve('../workflows') };
}

export interface CreateWorkersOptions {
  readonly connection: NativeConnection;
  readonly namespace: string;
  readonly roles: readonly QueueRole[];
  readonly activities: BuiltActivities;
  readonly concurrency: Readonly<Record<QueueRole, number>>;
  readonly workflowSource?: WorkflowSource;
  readonly identity?: string;
  /** Payload codec and failure converter; default: no encryption, failure messages in plain sight. */
  readonly dataConverter?: DataConverter;
  /** The agent worker's workflow cache and task concurrency; default: the SDK's. */
  readonly workflows?: AirlockConfig['workflows'];
  /** AIRLOCK_MACHINE: the tools worker polls that machine's queue (`airlock-tools.<machine>`); unset: the plain tools queue. */
  readonly machine?: string;
}

/** One worker per queue role; only the agent worker hosts workflows. */
export async function createWorkers(options: CreateWorkersOptions): Promise<Worker[]> {
  const workers: Worker[] = [];
  for (const role of options.roles) {
    const activities = options.activities[role];
    if (activities === undefined) throw new Error(`no activities were built for the ${role} queue`);
    const base: WorkerOptions = {
      connection: options.connection,
      namespace: options.namespace,
      taskQueue: role === 'tools' ? toolsQueueFor(options.machine) : TaskQueues[role],
      activities,
      maxConcurrentActivityTaskExecutions: options.concurrency[role],
      maxConcurrentLocalActivityExecutions: options.concurrency[role],
      dataConverter: options.dataConverter ?? { failureConverterPath: plainFailureConverterPath },
      ...(options.identity !== undefined ? { identity: `${options.identity}/${role}` } : {}),
    };
    workers.push(
      await Worker.create(role === 'agent' ? { ...base, ...cacheOptions(options.workflows), ...workflowOptions(options.workflowSource ?? defaultWorkflowSource(), failureMessagesOf(options.dataConverter)) } : base),
    );
  }
  return workers;
}

/**
 * The prebuilt bundle whose failure converter matches the worker's codec;
 * sources are bundled on the fly the way the prebuilt ones are (the SDK
 * bundles the worker's own failure converter in).
 */
function workflowOptions(source: WorkflowSource, failures: FailureMessages): Partial<WorkerOptions> {
  if ('bundles' in source) return { workflowBundle: { codePath: source.bundles[failures] } };
  return { workflowsPath: source.workflowsPath, bundlerOptions: { preloadModules: workflowBundleOptions(source.workflowsPath, failures).preloadModules } };
}

/**
 * A parked job holds no worker memory once evicted: it is replayed from
 * history when a decision or its expiry wakes it. The cache bounds what
 * thousands of parked jobs cost.
 */
function cacheOptions(workflows: AirlockConfig['workflows'] | undefined): Partial<WorkerOptions> {
  if (workflows === undefined) return {};
  return {
    maxCachedWorkflows: workflows.cacheSize,
    maxConcurrentWorkflowTaskExecutions: workflows.concurrency,
    stickyQueueScheduleToStartTimeout: workflows.stickyTimeoutMs,
  };
}
