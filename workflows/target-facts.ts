import { describeError } from '../core/temporal/describe-error';
import type { PreflightedCall } from '../core/job/preflight';
import type { CallFacts } from '../core/tools/facts';
import type { PrepareApprovalResult } from '../activities/tool-gate/messages';
import { observeOptions, routable, routeOf, tools, type ToolsRoute } from './activities';
import type { Job } from './job';
import type { JobState } from './job-state';

/** What the tools side said of the calls: their facts, and each one's approval prepared for the case it parks. */
export interface TargetFacts {
  readonly facts: Record<string, CallFacts>;
  readonly prepared: Record<string, PrepareApprovalResult>;
}

/**
 * The real targets behind the calls' paths, from the tools side. When it
 * cannot answer the targets are unknown, and detectors then assume the
 * worst (an overwrite replaces something); rules on paths see the paths
 * as written. The same round trip prepares each call's approval.
 */
export async function resolveTargets(
  job: Job,
  state: JobState,
  calls: readonly PreflightedCall[],
  callIds: readonly string[],
  prepareFor: readonly string[],
): Promise<TargetFacts> {
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
      const prepare = group.flatMap((c) => (prepareFor.includes(c.callId) ? [c.callId] : []));
      try {
        return await tools.resolveTargets.executeWithOptions(
          { ...observeOptions, taskQueue: route.taskQueue, summary: `resolve targets of ${group.length} call(s)` },
          [{ calls: group, ...(prepare.length > 0 ? { prepare } : {}), ...route.on }],
        );
      } catch (err) {
        job.audit.record({ type: 'runtime_error', data: { code: 'facts_unavailable', error: describeError(err) } });
        return { facts: {} };
      }
    }),
  );
  const facts: Record<string, CallFacts> = {};
  const prepared: Record<string, PrepareApprovalResult> = {};
  for (const answer of answers) {
    Object.assign(facts, answer.facts);
    // A worker of an earlier build does not prepare: its calls are prepared when they park.
    Object.assign(prepared, answer.prepared ?? {});
  }
  return { facts, prepared };
}
