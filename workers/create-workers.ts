import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { DataConverter } from '@temporalio/common';
import type { AirlockConfig } from '../core/config/config';
import { Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { failureConverterPath } from '../host/data-converter';
import { workflowBundleOptions } from './workflow-bundle';
import type { Activities } from '../activities';
import { TaskQueues, toolsQueueFor, type QueueRole } from '../core/temporal/task-queues';

export type BuiltActivities = Activities;

/** Where the agent worker loads workflow code from: a prebuilt bundle when `npm run build` made one. */
export type WorkflowSource = { workflowBundle: { codePath: string } } | { workflowsPath: string };

export function defaultWorkflowSource(): WorkflowSource {
  const prebuilt = join(__dirname, '..', 'workflow-bundle.js');
  if (__dirname.includes(`${join('dist', 'workers')}`) && existsSync(prebuilt)) {
    return { workflowBundle: { codePath: prebuilt } };
  }
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
  /** Payload codec and failure converter; default: failure messages as payloads, no encryption. */
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
      dataConverter: options.dataConverter ?? { failureConverterPath },
      ...(options.identity !== undefined ? { identity: `${options.identity}/${role}` } : {}),
    };
    workers.push(
      await Worker.create(role === 'agent' ? { ...base, ...cacheOptions(options.workflows), ...workflowOptions(options.workflowSource ?? defaultWorkflowSource()) } : base),
    );
  }
  return workers;
}

/** A prebuilt bundle as is; workflow sources bundled on the fly the way the prebuilt one is. */
function workflowOptions(source: WorkflowSource): Partial<WorkerOptions> {
  if ('workflowBundle' in source) return source;
  return { workflowsPath: source.workflowsPath, bundlerOptions: { preloadModules: workflowBundleOptions(source.workflowsPath).preloadModules } };
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
