import { z } from 'zod';
import { AirlockSearchAttributes } from './search-attributes';
import { TaskQueues } from './task-queues';

/**
 * Worker Deployments: each build of airlock is a deployment version, named
 * by its build id. The agent queue hosts the workflows, so its deployment
 * is versioned: a job is pinned to the build it started on and moves to a
 * newer build only by continuing as new once that build is current. The
 * tools and judge queues host activities only; their workers report their
 * build but poll unversioned, so any build serves them and they upgrade by
 * restarting (their inputs carry a schemaVersion for that).
 */

/**
 * The signal that wakes a parked job when a newer build became current
 * (`newBuildSignal` in workflows/messages.ts is defined by this name; the
 * batch that sends it to every parked job names it here).
 */
export const NEW_BUILD_SIGNAL = 'newBuild';

/** The agent queue's deployment: the one whose current version decides where jobs run. */
export const AGENT_DEPLOYMENT = TaskQueues.agent;

/** A deployment per queue, named like the queue (`airlock-tools.nas` becomes `airlock-tools-nas`: the server keeps `.` for itself in version strings). */
export function deploymentNameOf(queue: string): string {
  return queue.replace(/\./g, '-');
}

export const buildIdSchema = z
  .string()
  .trim()
  .regex(/^[A-Za-z0-9][A-Za-z0-9._+-]*$/, 'expected letters, digits and . _ + - (for example 0.1.0-3f2a9c1b7d4e)')
  .max(200, 'at most 200 characters');

/** package version plus the first 12 hex digits of the workflow bundle's SHA-256: a changed bundle is a new build. */
export function defaultBuildId(input: { readonly packageVersion: string; readonly bundleDigest: string }): string {
  return `${input.packageVersion}-${input.bundleDigest.slice(0, 12)}`;
}

/** How visibility writes a version (`TemporalWorkerDeploymentVersion`). */
export function versionText(input: { readonly deploymentName: string; readonly buildId: string }): string {
  return `${input.deploymentName}:${input.buildId}`;
}

function quoted(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}

/** Running (or only the parked) jobs pinned to one build of the agent deployment. */
export function jobsOnBuildQuery(buildId: string, which: 'running' | 'parked' = 'running'): string {
  const running = `TemporalWorkerDeploymentVersion = ${quoted(versionText({ deploymentName: AGENT_DEPLOYMENT, buildId }))} AND ExecutionStatus = 'Running'`;
  return which === 'running' ? running : `${running} AND ${AirlockSearchAttributes.status.name} = 'awaiting_approval'`;
}

/** Parked jobs of the agent deployment on any build but `buildId`: the ones a wake moves to it. */
export function parkedElsewhereQuery(buildId: string): string {
  return [
    `TemporalWorkerDeployment = ${quoted(AGENT_DEPLOYMENT)}`,
    `TemporalWorkerDeploymentVersion != ${quoted(versionText({ deploymentName: AGENT_DEPLOYMENT, buildId }))}`,
    `ExecutionStatus = 'Running'`,
    `${AirlockSearchAttributes.status.name} = 'awaiting_approval'`,
  ].join(' AND ');
}
