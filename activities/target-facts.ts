import { withHeartbeat } from './heartbeat';
import type { CallFacts } from '../core/policy/facts';
import { getTool } from '../core/tools/definitions';
import { callFacts } from '../host/target-facts';

export interface ResolveTargetsInput {
  readonly calls: ReadonlyArray<{ readonly callId: string; readonly toolName: string; readonly args: Record<string, unknown> }>;
}

export interface ResolveTargetsResult {
  /** By call id; a call the tools side does not know gets no facts. */
  readonly facts: Readonly<Record<string, CallFacts>>;
}

/**
 * Runs where the side effects happen, before policy decides: the real
 * targets behind a batch's paths, so rules match the place and not the
 * spelling.
 */
export function createTargetFactActivities(deps: { readonly roots: { readonly configured: readonly string[] } }) {
  return {
    async resolveTargets(input: ResolveTargetsInput): Promise<ResolveTargetsResult> {
      // Its activity has a heartbeat timeout like every tools activity.
      return withHeartbeat(
        () => ({ phase: 'resolving' }),
        async () => {
          const facts: Record<string, CallFacts> = {};
          for (const call of input.calls) {
            const tool = getTool(call.toolName);
            const parsed = tool?.parameters.safeParse(call.args);
            if (tool === undefined || parsed === undefined || !parsed.success) continue;
            facts[call.callId] = await callFacts(tool.targets(parsed.data), deps.roots.configured);
          }
          return { facts };
        },
      );
    },
  };
}
