import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { AgentActivities, JudgeActivities, ToolActivities } from '../activities';
import type { PolicySnapshot } from '../core/policy/snapshot';
import { TaskQueues, toolsQueueFor } from '../core/temporal/task-queues';
import { machineOf, ownerOf } from '../core/tools/machines';

/** Model turns: a slow endpoint gets a few tries, then the job fails with `model_error`. */
export const model = proxyActivities<AgentActivities>({
  taskQueue: TaskQueues.agent,
  startToCloseTimeout: '3 minutes',
  retry: { initialInterval: '2 seconds', maximumAttempts: 5 },
});

/** Fast, deterministic-cost work on the agent worker: recorded as markers, not as scheduled tasks. */
export const local = proxyLocalActivities<AgentActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumAttempts: 5 },
});

/**
 * Tools activities heartbeat every 2 s while they work: a tools worker that
 * dies is noticed after this, and the call retried on another, within
 * seconds instead of at the start-to-close timeout. Options are not part of
 * the commands replay compares, so changing them needs no patch.
 */
const TOOLS_HEARTBEAT_TIMEOUT = '15 seconds';

/** prepare and revalidate only observe (a folder's whole tree at most); calls add a summary for the Web UI on top of these. */
export const observeOptions = {
  taskQueue: TaskQueues.tools,
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: TOOLS_HEARTBEAT_TIMEOUT,
  retry: { initialInterval: '2 seconds', maximumAttempts: 5 },
} as const;

/**
 * Safe to retry: the nonce is consumed before the side effect, so a retry
 * reports the stored outcome, or reconciles with the target when the
 * attempt that consumed it died. Start-to-close bounds the longest real
 * work (observing and deleting a 100,000-entry tree); retries back off to
 * at most 10 s, since a retry may wait for a dead attempt's claim to lapse.
 */
export const executeOptions = {
  taskQueue: TaskQueues.tools,
  startToCloseTimeout: '10 minutes',
  heartbeatTimeout: TOOLS_HEARTBEAT_TIMEOUT,
  retry: { initialInterval: '2 seconds', maximumInterval: '10 seconds', maximumAttempts: 10 },
} as const;

export const tools = proxyActivities<ToolActivities>(observeOptions);

/** Where one call's tools activities run, and the machine their input names so a worker of another refuses them. */
export interface ToolsRoute {
  readonly taskQueue: string;
  readonly on: { readonly machine?: string };
}

/**
 * A call runs on the tools queue of the machine that owns its target
 * (`airlock-tools.nas`); with one machine, on the plain tools queue. The
 * owner follows from the job's frozen snapshot and the call's arguments
 * alone, so every step of the call asks and gets the same answer.
 */
export function routeOf(snapshot: PolicySnapshot, call: { readonly toolName: string; readonly args: unknown }): ToolsRoute {
  const machine = machineOf(snapshot.machines, call.toolName, call.args);
  return { taskQueue: toolsQueueFor(machine), on: machine === undefined ? {} : { machine } };
}

/** Whether some machine owns the call; one that none owns is denied by the planner and never reaches a tools queue. */
export function routable(snapshot: PolicySnapshot, call: { readonly toolName: string; readonly args: unknown }): boolean {
  return ownerOf(snapshot.machines, call.toolName, call.args).kind !== 'none';
}

/**
 * A signed decision's signature, checked on the agent queue by an activity,
 * not a local one: decision handlers run side by side, and an activity's
 * result is a history event, so live and replay resume them in the same
 * order. A few quick tries; a failure is a rejected decision, never a
 * failed job.
 */
export const verifyOptions = {
  taskQueue: TaskQueues.agent,
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumAttempts: 3 },
} as const;

export const verify = proxyActivities<AgentActivities>(verifyOptions);

/**
 * Standing approvals, kept and used on the agent queue by activities whose
 * results are history events (a use is taken once per job and request,
 * so a retry or a replay takes no second one).
 */
export const standing = proxyActivities<AgentActivities>({ ...verifyOptions, retry: { initialInterval: '1 second', maximumAttempts: 5 } });

/** The judge: one try within the snapshot's short budget; a failure is a verdict, never a failed job. */
export const judge = proxyActivities<JudgeActivities>({
  taskQueue: TaskQueues.judge,
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 1 },
});
