import { withHeartbeat } from './heartbeat';
import type { CallFacts } from '../core/tools/facts';
import { getTool } from '../core/tools/registry';
import { lendHost } from '../core/tools/lend';
import { pathTargets } from '../core/tools/tool-module';
import { createToolHost, type ToolHostDeps } from '../host/tools/tool-host';
import { onThisMachine } from './tool-gate/runner';
import type { PrepareApprovalInput, PrepareApprovalResult } from './tool-gate/messages';

export interface ResolveTargetsInput {
  /** The machine these calls are on (absent with one machine); a worker of another refuses them. */
  readonly machine?: string;
  readonly calls: ReadonlyArray<{ readonly callId: string; readonly toolName: string; readonly args: Record<string, unknown> }>;
  /**
   * The calls (by id) whose approval to prepare too, as `prepareApproval`
   * would: a call a rule could park then needs nothing more from the tools
   * side before the reviewer sees it.
   */
  readonly prepare?: readonly string[];
}

export interface ResolveTargetsResult {
  /** By call id; a call the tools side does not know gets no facts. */
  readonly facts: Readonly<Record<string, CallFacts>>;
  /** By call id, when asked: what the reviewer would approve. A call that could not be prepared here is absent (the job asks `prepareApproval`). */
  readonly prepared?: Readonly<Record<string, PrepareApprovalResult>>;
}

export interface TargetFactDeps extends ToolHostDeps {
  readonly machine?: string;
  /** How an approval is prepared on this worker (the tool gate's `prepareCall`); unset: `prepare` is not answered. */
  readonly prepare?: (input: PrepareApprovalInput) => Promise<PrepareApprovalResult>;
}

/**
 * Runs where the side effects happen, before policy decides: the real
 * targets behind a batch's paths, so rules match the place and not the
 * spelling.
 */
export function createTargetFactActivities(deps: TargetFactDeps) {
  const host = createToolHost(deps);
  return {
    async resolveTargets(input: ResolveTargetsInput): Promise<ResolveTargetsResult> {
      // Its activity has a heartbeat timeout like every tools activity.
      return withHeartbeat(
        () => ({ phase: 'resolving' }),
        async () => {
          onThisMachine(deps, input.machine);
          const facts: Record<string, CallFacts> = {};
          for (const call of input.calls) {
            const tool = getTool(call.toolName);
            const parsed = tool?.parameters.safeParse(call.args);
            if (tool === undefined || parsed === undefined || !parsed.success) continue;
            // A tool this worker is not configured for gets no facts: policy assumes the worst, and the gate refuses it anyway.
            const loan = lendHost(tool, host);
            if (!loan.ok) continue;
            if (tool.facts !== undefined) facts[call.callId] = await tool.facts(loan.host, parsed.data);
            else if (tool.pathFields.length > 0 && loan.host.files !== undefined) facts[call.callId] = await loan.host.files.facts(pathTargets(tool, parsed.data));
          }
          const prepare = deps.prepare;
          const wanted = input.prepare ?? [];
          if (wanted.length === 0 || prepare === undefined) return { facts };
          const prepared: Record<string, PrepareApprovalResult> = {};
          const { machine } = input;
          for (const call of input.calls.filter((c) => wanted.includes(c.callId))) {
            // A call that cannot be prepared now is prepared again, with retries, if it parks.
            const answer = await prepare({ toolName: call.toolName, args: call.args, ...(machine !== undefined ? { machine } : {}) }).catch(() => undefined);
            if (answer !== undefined) prepared[call.callId] = answer;
          }
          return { facts, prepared };
        },
      );
    },
  };
}
