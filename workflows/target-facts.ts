import { describeError } from '../core/temporal/describe-error';
import type { PreflightedCall } from '../core/job/preflight';
import type { CallFacts } from '../core/tools/facts';
import { observeOptions, routable, routeOf, tools, type ToolsRoute } from './activities';
import type { Job } from './job';
import type { JobState } from './job-state';

/**
 * The real targets behind the calls' paths, from the tools side. When it
 * cannot answer the targets are unknown, and detectors then assume the
 * worst (an overwrite replaces something); rules on paths see the paths
 * as written.
 */
export async function resolveTargets(job: Job, state: JobState, calls: readonly PreflightedCall[], callIds: readonly string[]): Promise<Record<string, CallFacts>> {
  const asked = calls.flatMap((c) =>
    c.kind === 'tool' && callIds.includes(c.callId) && routable(state.snapshot, c) ? [{ callId: c.callId, toolName: c.toolName, args: c.args }] : [],
  );
  // One question per machine, side by side: each machine's worker resolves its own targets.
  const byQueue = new Map<string, { route: ToolsRoute; calls: typeof asked }>();
  for (const call of asked) {
    const route = routeOf(state.snapshot, call);
    const group = byQueue.get(route.taskQueue) ?? { route, calls: [] };
    group.calls.push(call);
    byQueue.set(route.taskQueue, group);
  }
  const answers = await Promise.all(
    [...byQueue.values()].map(async ({ route, calls: group }) => {
      try {
        const { facts } = await tools.resolveTargets.executeWithOptions(
          { ...observeOptions, taskQueue: route.taskQueue, summary: `resolve targets of ${group.length} call(s)` },
          [{ calls: group, ...route.on }],
        );
        return facts;
      } catch (err) {
        job.audit.record({ type: 'runtime_error', data: { code: 'facts_unavailable', error: describeError(err) } });
        return {};
      }
    }),
  );
  const facts: Record<string, CallFacts> = {};
  for (const answer of answers) Object.assign(facts, answer);
  return facts;
}
