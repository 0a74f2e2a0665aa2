import { performance } from 'node:perf_hooks';
import { createContext, Script } from 'node:vm';
import { tsToMs } from '@temporalio/common/lib/time';
import type { History } from '@temporalio/common/lib/proto-utils';
import { temporal } from '@temporalio/proto';
import { TEMPORAL_DYNAMIC_CONFIG } from '../../ops/temporal/dynamic-config';
import type { BenchOptions } from './args';
import type { Figure } from './figures';
import { PLAIN_NOOPS_WORKFLOW } from './plain-workflow';
import { PLAIN_TASK_QUEUE } from './plain-worker';
import type { Stack } from './stack';
import { sampled, summary, timed } from './stats';

/**
 * What Temporal costs by itself on the bench's dev server, with no airlock
 * code: an empty plain workflow, and no-op activities (and local ones) run
 * one after another. Each activity's time is split by its history's event
 * times: matching's hand-off of the activity task (scheduled to started),
 * the worker (started to completed), matching's hand-off of the workflow
 * task the result wakes (scheduled to started) and that task on the
 * worker (started to completed).
 */

const ACTIVITIES = 20;

const Event = temporal.api.enums.v1.EventType;

export interface Split {
  readonly activityHandOff: number[];
  readonly activityRun: number[];
  readonly workflowTaskHandOff: number[];
  readonly workflowTaskRun: number[];
}

/** The split of one run's history, into `into`; the first workflow task (the workflow's start) is left out. */
export function splitHistory(history: History, into: Split): void {
  const events = history.events ?? [];
  const at = new Map(events.map((e) => [Number(e.eventId), tsToMs(e.eventTime)]));
  const since = (id: unknown, t: number) => t - (at.get(Number(id)) ?? Number.NaN);
  for (const e of events) {
    const t = tsToMs(e.eventTime);
    if (e.eventType === Event.EVENT_TYPE_ACTIVITY_TASK_STARTED) into.activityHandOff.push(since(e.activityTaskStartedEventAttributes?.scheduledEventId, t));
    else if (e.eventType === Event.EVENT_TYPE_ACTIVITY_TASK_COMPLETED) into.activityRun.push(since(e.activityTaskCompletedEventAttributes?.startedEventId, t));
    else if (e.eventType === Event.EVENT_TYPE_WORKFLOW_TASK_STARTED && Number(e.eventId) > 3) {
      into.workflowTaskHandOff.push(since(e.workflowTaskStartedEventAttributes?.scheduledEventId, t));
    } else if (e.eventType === Event.EVENT_TYPE_WORKFLOW_TASK_COMPLETED && Number(e.eventId) > 4) {
      into.workflowTaskRun.push(since(e.workflowTaskCompletedEventAttributes?.startedEventId, t));
    }
  }
}

const VM_CALLS = 2_000;

/**
 * What one entry into a workflow's sandbox costs by itself: the SDK calls
 * into the job's `vm` context about three times per activation, each time
 * with a time limit (its `isolateExecutionTimeout`), and Node enforces a
 * limit with a thread it starts and joins per call. Per call, with and
 * without a limit, on this process's thread.
 */
function vmEntryFigures(): Figure[] {
  const context = createContext({ n: 0 });
  const script = new Script('n++');
  const perCall = (options: { timeout?: number }) => {
    const samples: number[] = [];
    for (let round = 0; round < 5; round++) {
      const t0 = performance.now();
      for (let i = 0; i < VM_CALLS; i++) script.runInContext(context, options);
      samples.push(((performance.now() - t0) * 1000) / VM_CALLS);
    }
    return summary(samples);
  };
  perCall({});
  const free = perCall({});
  const limited = perCall({ timeout: 5_000 });
  return [
    { part: 'floor', name: 'vm entry, with a time limit (as the SDK enters a workflow)', unit: 'us', value: limited.median, p95: limited.p95, n: limited.n, note: `per call, ${VM_CALLS} calls a round; a thread started and joined each` },
    { part: 'floor', name: 'vm entry, without a limit', unit: 'us', value: free.median, p95: free.p95, n: free.n, note: `per call, ${VM_CALLS} calls a round` },
  ];
}

export async function floorPart(stack: Stack, options: BenchOptions): Promise<Figure[]> {
  const run = async (id: string, count: number, local: boolean) =>
    (await timed(() => stack.client.workflow.execute(PLAIN_NOOPS_WORKFLOW, { taskQueue: PLAIN_TASK_QUEUE, workflowId: id, args: [count, local] }))).ms;
  // Warm-up: the workflow bundle, the caches and the connections settle before anything counts.
  await run('floor-warm-remote', 3, false);
  await run('floor-warm-local', 3, true);
  const empty: number[] = [];
  const perActivity: number[] = [];
  const perLocal: number[] = [];
  const split: Split = { activityHandOff: [], activityRun: [], workflowTaskHandOff: [], workflowTaskRun: [] };
  for (let round = 0; round < options.floorRounds; round++) {
    empty.push(await run(`floor-empty-${round}`, 0, false));
    perActivity.push((await run(`floor-remote-${round}`, ACTIVITIES, false)) / ACTIVITIES);
    splitHistory(await stack.client.workflow.getHandle(`floor-remote-${round}`).fetchHistory(), split);
    perLocal.push((await run(`floor-local-${round}`, ACTIVITIES, true)) / ACTIVITIES);
  }
  const config = Object.entries(TEMPORAL_DYNAMIC_CONFIG)
    .map(([k, v]) => `${k}=${v}`)
    .join(' ');
  const figure = (name: string, values: readonly number[], note: string): Figure => ({ part: 'floor', name, unit: 'ms', ...sampled(values), note });
  return [
    figure('empty plain workflow', empty, 'start to result'),
    figure(`no-op activity, ${ACTIVITIES} in a row`, perActivity, `workflow's time / ${ACTIVITIES}; server: ${config}`),
    figure('  activity task hand-off', split.activityHandOff, 'scheduled to started (history, matching)'),
    figure('  activity on the worker', split.activityRun, 'started to completed'),
    figure('  workflow task hand-off', split.workflowTaskHandOff, 'scheduled to started (history, matching)'),
    figure('  workflow task on the worker', split.workflowTaskRun, 'started to completed'),
    {
      part: 'floor',
      name: '  slowest hand-off',
      unit: 'ms',
      value: Math.max(...split.activityHandOff, ...split.workflowTaskHandOff),
      n: split.activityHandOff.length + split.workflowTaskHandOff.length,
      note: 'activity or workflow task; a task stuck on a partition shows here',
    },
    figure(`local no-op activity, ${ACTIVITIES} in a row`, perLocal, `workflow's time / ${ACTIVITIES}`),
    ...vmEntryFigures(),
  ];
}
