import { randomUUID } from 'node:crypto';
import type { Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { AGENT_DEPLOYMENT, jobsOnBuildQuery, NEW_BUILD_SIGNAL, parkedElsewhereQuery } from '../../core/temporal/deployments';
import { AirlockError } from '../../core/util/errors';

/** The gRPC service both client and worker connections expose. */
export type WorkflowService = Connection['workflowService'];

const NOT_FOUND = 5;
const FAILED_PRECONDITION = 9;

function grpcCode(err: unknown): number | undefined {
  const code: unknown = typeof err === 'object' && err !== null && 'code' in err ? err.code : undefined;
  return typeof code === 'number' ? code : undefined;
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A Worker Deployment operation failed in a way a person can act on. */
export class DeploymentError extends AirlockError {
  override name = 'DeploymentError';
}

const VersionStatus = temporal.api.enums.v1.WorkerDeploymentVersionStatus;

const statusNames: Record<number, VersionSummary['status']> = {
  [VersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_INACTIVE]: 'inactive',
  [VersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_CURRENT]: 'current',
  [VersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_RAMPING]: 'ramping',
  [VersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINING]: 'draining',
  [VersionStatus.WORKER_DEPLOYMENT_VERSION_STATUS_DRAINED]: 'drained',
};

export interface VersionSummary {
  readonly buildId: string;
  readonly status: 'inactive' | 'current' | 'ramping' | 'draining' | 'drained' | 'unknown';
}

export interface DeploymentState {
  readonly deploymentName: string;
  readonly currentBuildId: string | undefined;
  readonly rampingBuildId: string | undefined;
  readonly versions: readonly VersionSummary[];
  readonly conflictToken: Uint8Array;
  /** The server is still telling the task queues about a routing change (servers before 1.29 never say). */
  readonly propagating: boolean;
}

/** The deployment's routing and versions, or undefined before any versioned worker of it polled. */
export async function describeDeployment(input: { readonly service: WorkflowService; readonly namespace: string; readonly deploymentName?: string }): Promise<DeploymentState | undefined> {
  const deploymentName = input.deploymentName ?? AGENT_DEPLOYMENT;
  let res;
  try {
    res = await input.service.describeWorkerDeployment({ namespace: input.namespace, deploymentName });
  } catch (err) {
    if (grpcCode(err) === NOT_FOUND) return undefined;
    throw err;
  }
  const info = res.workerDeploymentInfo;
  const routing = info?.routingConfig;
  const current = routing?.currentDeploymentVersion?.buildId;
  const ramping = routing?.rampingDeploymentVersion?.buildId;
  return {
    deploymentName,
    currentBuildId: current !== undefined && current !== null && current !== '' ? current : undefined,
    rampingBuildId: ramping !== undefined && ramping !== null && ramping !== '' ? ramping : undefined,
    versions: (info?.versionSummaries ?? []).map((v) => ({
      buildId: v.deploymentVersion?.buildId ?? v.version ?? '',
      status: statusNames[v.status ?? 0] ?? 'unknown',
    })),
    conflictToken: res.conflictToken ?? new Uint8Array(),
    propagating: info?.routingConfigUpdateState === temporal.api.enums.v1.RoutingConfigUpdateState.ROUTING_CONFIG_UPDATE_STATE_IN_PROGRESS,
  };
}

/** `current`: a build was current already (perhaps this one) and stays so; `made_current`: this build is now, replacing `previous`. */
export type AdoptResult =
  | { readonly kind: 'made_current'; readonly previous?: string }
  | { readonly kind: 'current'; readonly buildId: string }
  | { readonly kind: 'not_registered' };

/**
 * A first install has no current build: the agent worker makes its own build
 * current, once the server knows it (a few hundred milliseconds after it
 * polls). Never replaces a current build: moving jobs to a new build is
 * `airlock deploy promote`. Two workers racing here agree through the
 * deployment's conflict token.
 */
export async function adoptIfNoCurrent(input: {
  readonly service: WorkflowService;
  readonly namespace: string;
  readonly buildId: string;
  readonly identity: string;
  readonly timeoutMs?: number;
  /** Also replace a current build (`airlock dev`, whose server runs one build at a time). */
  readonly replace?: boolean;
}): Promise<AdoptResult> {
  const deadline = Date.now() + (input.timeoutMs ?? 30_000);
  for (;;) {
    const state = await describeDeployment({ service: input.service, namespace: input.namespace });
    const current = state?.currentBuildId;
    if (current !== undefined && (current === input.buildId || input.replace !== true)) return { kind: 'current', buildId: current };
    // The server registers a version a moment after its first poll: until then it cannot be made current.
    if (state !== undefined && state.versions.some((v) => v.buildId === input.buildId)) {
      try {
        await input.service.setWorkerDeploymentCurrentVersion({
          namespace: input.namespace,
          deploymentName: AGENT_DEPLOYMENT,
          buildId: input.buildId,
          conflictToken: state.conflictToken,
          identity: input.identity,
        });
        return current === undefined ? { kind: 'made_current' } : { kind: 'made_current', previous: current };
      } catch (err) {
        // Another worker changed the deployment first, or the version is not ready yet: look again.
        const code = grpcCode(err);
        if (code !== FAILED_PRECONDITION && code !== NOT_FOUND && code !== 10 /* ABORTED */) throw err;
      }
    }
    if (Date.now() > deadline) return { kind: 'not_registered' };
    await sleep(200);
  }
}

/** Makes `buildId` the agent deployment's current build: new jobs start there, and parked jobs of older builds move there when woken. */
export async function promote(input: { readonly service: WorkflowService; readonly namespace: string; readonly buildId: string; readonly identity: string }): Promise<{ readonly previous: string | undefined }> {
  const state = await describeDeployment({ service: input.service, namespace: input.namespace });
  if (state === undefined) {
    throw new DeploymentError(`no agent worker has polled namespace ${input.namespace} yet: start the agent worker of build ${input.buildId} first (airlock worker agent)`);
  }
  if (!state.versions.some((v) => v.buildId === input.buildId)) {
    const known = state.versions.map((v) => v.buildId).join(', ');
    throw new DeploymentError(`build ${input.buildId} has no agent worker in namespace ${input.namespace} (known builds: ${known || 'none'}); start its agent worker first`);
  }
  try {
    const res = await input.service.setWorkerDeploymentCurrentVersion({
      namespace: input.namespace,
      deploymentName: AGENT_DEPLOYMENT,
      buildId: input.buildId,
      identity: input.identity,
    });
    const previous = res.previousDeploymentVersion?.buildId;
    await untilPropagated(input.service, input.namespace);
    return { previous: previous !== undefined && previous !== null && previous !== '' ? previous : undefined };
  } catch (err) {
    if (grpcCode(err) === FAILED_PRECONDITION) {
      throw new DeploymentError(`the server refused to make build ${input.buildId} current: ${err instanceof Error ? err.message : String(err)}`);
    }
    throw err;
  }
}

/**
 * Until every task queue routes by the new current build: a job woken
 * before that would still be told its target is the build it runs on.
 */
async function untilPropagated(service: WorkflowService, namespace: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const state = await describeDeployment({ service, namespace });
    if (state?.propagating !== true) return;
    if (Date.now() > deadline) throw new DeploymentError(`the server has not finished routing the ${AGENT_DEPLOYMENT} task queues to the new build after ${timeoutMs / 1000} s; try airlock deploy wake later`);
    await sleep(200);
  }
}

/**
 * Wakes, with one batch signal, every parked job of another build than
 * `buildId`; each continues as new onto the current build at once (servers
 * from 1.32 tell a pinned job that its target changed; older ones leave it
 * where it is). Returns how many were selected.
 */
export async function wakeParked(input: { readonly service: WorkflowService; readonly namespace: string; readonly buildId: string; readonly identity: string }): Promise<{ readonly selected: number }> {
  const jobId = `airlock-wake-${randomUUID()}`;
  await untilPropagated(input.service, input.namespace);
  const visibilityQuery = parkedElsewhereQuery(input.buildId);
  const count = await input.service.countWorkflowExecutions({ namespace: input.namespace, query: visibilityQuery });
  const selected = Number(count.count ?? 0);
  if (selected === 0) return { selected };
  await input.service.startBatchOperation({
    namespace: input.namespace,
    jobId,
    reason: `build ${input.buildId} is current: parked jobs of older builds move to it`,
    visibilityQuery,
    signalOperation: { signal: NEW_BUILD_SIGNAL, identity: input.identity },
  });
  for (;;) {
    const d = await input.service.describeBatchOperation({ namespace: input.namespace, jobId });
    if (d.state !== temporal.api.enums.v1.BatchOperationState.BATCH_OPERATION_STATE_RUNNING) {
      if (d.state !== temporal.api.enums.v1.BatchOperationState.BATCH_OPERATION_STATE_COMPLETED) {
        throw new DeploymentError(`the batch signal ${jobId} ended ${temporal.api.enums.v1.BatchOperationState[d.state ?? 0] ?? 'unknown'}; see temporal batch describe --job-id ${jobId}`);
      }
      return { selected };
    }
    await sleep(200);
  }
}

/** How many running and parked jobs each build of the agent deployment still holds. */
export async function jobsOnBuild(input: { readonly service: WorkflowService; readonly namespace: string; readonly buildId: string }): Promise<{ readonly running: number; readonly parked: number }> {
  const [all, parked] = await Promise.all([
    input.service.countWorkflowExecutions({ namespace: input.namespace, query: jobsOnBuildQuery(input.buildId) }),
    input.service.countWorkflowExecutions({ namespace: input.namespace, query: jobsOnBuildQuery(input.buildId, 'parked') }),
  ]);
  return { running: Number(all.count ?? 0), parked: Number(parked.count ?? 0) };
}

/** For a stack that owns its namespace (tests, recordings, benchmarks): this build is current once its worker polls, or the call fails. */
export async function requireCurrent(input: { readonly service: WorkflowService; readonly namespace: string; readonly buildId: string; readonly identity?: string }): Promise<void> {
  const adopted = await adoptIfNoCurrent({ ...input, identity: input.identity ?? `airlock ${input.buildId}` });
  if (adopted.kind === 'made_current' || (adopted.kind === 'current' && adopted.buildId === input.buildId)) return;
  throw new DeploymentError(
    adopted.kind === 'current'
      ? `build ${adopted.buildId} is current in namespace ${input.namespace}, not this build ${input.buildId}`
      : `the server did not register build ${input.buildId} in namespace ${input.namespace}`,
  );
}
