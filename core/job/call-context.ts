import { stateFingerprint } from '../approval/fingerprint';
import type { ToolCall } from './preflight';
import { pathTargetsOf } from '../tools/registry';
import type { CallContext } from '../policy/call-evaluation';
import type { JobScope } from '../policy/rules';
import type { CallFacts } from '../tools/facts';
import { machineOf, type MachineTable } from '../tools/machines';

/**
 * What policy sees of one tool call of a job: its targets, the tools
 * side's facts of them and its state fingerprint. The one definition
 * behind a job's evaluation and a rehearsal of its recorded calls.
 */
export function callContext(jobId: string, scope: JobScope, call: ToolCall, facts: CallFacts | undefined, machines?: MachineTable): CallContext {
  const machine = machineOf(machines, call.toolName, call.args);
  return {
    toolName: call.toolName,
    category: call.category,
    args: call.args,
    scope,
    targets: pathTargetsOf(call.toolName, call.args),
    facts,
    fingerprint: stateFingerprint(jobId, scope, call),
    ...(machine !== undefined ? { machine } : {}),
  };
}
