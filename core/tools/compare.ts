import { describeChanges, observedSubject, type ObservedState } from './observed-state';
import type { AnyTool, Prepared, RevalidateCheck, RevalidateVerdict } from './tool-module';
import type { Capability, HostFor } from './tool-host';

/**
 * Differences between the targets as they were (by position) and as they
 * are now; empty when unchanged. A target an edit replaced was chosen by
 * the reviewer, not observed: nothing to compare.
 */
export function changesSince(before: readonly ObservedState[], now: Prepared, targetsThen: readonly string[], targetsNow: readonly string[]): string[] {
  const changes: string[] = [];
  now.observed.forEach((seen, i) => {
    const earlier = before[i];
    const problem = now.problems[i];
    if (earlier === undefined || targetsThen[i] !== targetsNow[i]) return;
    const [was, is] = [observedSubject(earlier), observedSubject(seen)];
    // It cannot be seen now (e.g. a folder on the way became a link out), unlike then: say why, not "no longer exists".
    if (problem !== undefined && !seen.exists && (earlier.exists || was !== is)) changes.push(problem.reason);
    else if (was !== is) changes.push(`${targetsNow[i]} now leads to ${is} (it led to ${was})`);
    else changes.push(...describeChanges(earlier, seen));
  });
  return changes;
}

/** The module's own verdict, or by default: any change since approval refuses the call. */
export async function revalidateWith(tool: AnyTool, host: HostFor<Capability>, check: RevalidateCheck<unknown>): Promise<RevalidateVerdict> {
  if (tool.revalidate !== undefined) return tool.revalidate(host, check);
  const changes = changesSince(check.approved, check.now, check.targetsThen, check.targetsNow);
  return changes.length === 0 ? { kind: 'ok' } : { kind: 'changed', reason: `the target changed since it was approved: ${changes.join('; ')}` };
}
