import type { DataConverter } from '@temporalio/common';
import type { AirlockConfig } from '../core/config/config';
import { Worker, type NativeConnection, type WorkerOptions } from '@temporalio/worker';
import { plainFailureConverterPath } from '../host/temporal/data-converter';
import { failureMessagesOf } from './workflow-bundle';
import { loadWorkflowCode, defaultWorkflowSource, type WorkflowSource } from './workflow-code';
import { deploymentNameOf } from '../core/temporal/deployments';
import type { Activities } from '../activities';
import { TaskQueues, toolsQueueFor, type QueueRole } from '../core/temporal/task-queues';

export type BuiltActivities = Activities;

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
  /** AIRLOCK_BUILD_ID; default: the package version plus a hash of the workflow bundle. */
  readonly buildId?: string;
}

/** The workers, and the build (Worker Deployment version) they run as. */
export interface CreatedWorkers {
  readonly workers: Worker[];
  readonly buildId: string;
}

/**
 * One worker per queue role; only the agent worker hosts workflows. Each
 * worker belongs to its queue's Worker Deployment as this build. The agent
 * worker is versioned and pins every job it starts to this build; tools
 * and judge workers report the build but poll unversioned (they run
 * activities only, so any build may serve them).
 */
export async function createWorkers(options: CreateWorkersOptions): Promise<CreatedWorkers> {
  const workflow = await loadWorkflowCode({
    source: options.workflowSource ?? defaultWorkflowSource(),
    failures: failureMessagesOf(options.dataConverter),
    ...(options.buildId !== undefined ? { buildId: options.buildId } : {}),
  });
  const workers: Worker[] = [];
  for (const role of options.roles) {
    const activities = options.activities[role];
    if (activities === undefined) throw new Error(`no activities were built for the ${role} queue`);
    const taskQueue = role === 'tools' ? toolsQueueFor(options.machine) : TaskQueues[role];
    const version = { deploymentName: deploymentNameOf(taskQueue), buildId: workflow.buildId };
    const base: WorkerOptions = {
      connection: options.connection,
      namespace: options.namespace,
      taskQueue,
      activities,
      maxConcurrentActivityTaskExecutions: options.concurrency[role],
      maxConcurrentLocalActivityExecutions: options.concurrency[role],
      dataConverter: options.dataConverter ?? { failureConverterPath: plainFailureConverterPath },
      workerDeploymentOptions: { version, useWorkerVersioning: false },
      ...(options.identity !== undefined ? { identity: `${options.identity}/${role}` } : {}),
    };
    workers.push(
      await Worker.create(
        role === 'agent'
          ? {
              ...base,
              ...cacheOptions(options.workflows),
              workflowBundle: { code: workflow.code },
              // A job runs to its end (or its next continue-as-new onto a newer build) on the build it started on.
              workerDeploymentOptions: { version, useWorkerVersioning: true, defaultVersioningBehavior: 'PINNED' },
            }
          : base,
      ),
    );
  }
  return { workers, buildId: workflow.buildId };
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
