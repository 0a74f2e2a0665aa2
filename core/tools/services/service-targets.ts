import { z } from 'zod';
import { isFileState, type ObservedState, type ServiceState } from '../observed-state';
import type { ServiceCapability } from '../capabilities/services';
import { recheckService, serviceActionDoneOn, type ServiceAction } from '../service-state';
import type { Postcondition, Prepared, RevalidateCheck, RevalidateVerdict, TargetProblem, ToolOutcome } from '../tool-module';
import type { HostFor } from '../tool-host';
import { ToolRefusal } from '../tool-refusal';

/** What the service tools share: the service argument, how a service is observed, and the hooks of the actions. */

export const serviceArg = z
  .string()
  .regex(/^[a-z0-9][a-z0-9_.-]{0,62}$/, 'service is a configured service name: lowercase letters, digits, ".", "_" or "-"')
  .describe('The configured name of the service or container, as service_status lists it.');

export const serviceArgs = z.strictObject({ service: serviceArg });
export type ServiceArgs = z.output<typeof serviceArgs>;

function errorText(err: unknown): string {
  if (typeof err === 'object' && err !== null && 'message' in err && typeof err.message === 'string') return err.message;
  return String(err);
}

/** Each service as it is now; one that cannot be observed is recorded as not existing, with the reason as its problem. */
export async function prepareServices(services: ServiceCapability, names: readonly string[]): Promise<Prepared> {
  const observed: ServiceState[] = [];
  const problems: Array<TargetProblem | undefined> = [];
  for (const name of names) {
    try {
      const seen = await services.observe(name);
      observed.push(seen);
      problems.push(seen.exists ? undefined : { kind: 'refused', reason: seen.status });
    } catch (err) {
      problems.push(err instanceof ToolRefusal ? { kind: 'refused', reason: err.message } : { kind: 'unobservable', reason: `${name} cannot be observed (${errorText(err)})` });
      observed.push({ kind: 'service', service: name, adapter: 'unknown', exists: false, identity: null, running: false, health: 'unknown', status: errorText(err), facts: {} });
    }
  }
  return { observed, problems };
}

/** One line for the model: name, adapter, whether it serves, and what the adapter said. */
export function describeService(s: ServiceState): string {
  if (!s.exists) return `${s.service}: ${s.status}`;
  const state = !s.running ? 'stopped' : s.health === 'none' || s.health === 'unknown' ? 'running' : s.health;
  return `${s.service} (${s.adapter}): ${state} — ${s.status}`;
}

export function serviceAt(states: readonly ObservedState[] | undefined, i: number): ServiceState | undefined {
  const state = states?.[i];
  return state !== undefined && !isFileState(state) && state.kind === 'service' ? state : undefined;
}

/**
 * Still the service the reviewer saw (same container id, unit file, pid
 * and start time), and still something to do: a restart of a service that
 * was not healthy then and is healthy again now is not needed.
 */
export function revalidateAction(action: ServiceAction, check: RevalidateCheck<ServiceArgs>): RevalidateVerdict {
  const approved = serviceAt(check.approved, 0);
  const now = serviceAt(check.now.observed, 0);
  const problem = check.now.problems[0];
  if (problem !== undefined && now?.exists !== true) return { kind: 'changed', reason: problem.reason };
  if (approved === undefined || now === undefined) return { kind: 'changed', reason: `${check.args.service} was not observed as a service` };
  const verdict = recheckService(action, approved, now);
  switch (verdict.verdict) {
    case 'run':
      return { kind: 'ok' };
    case 'refuse':
      return { kind: 'changed', reason: verdict.reason };
    case 'not_needed':
      return { kind: 'not_needed', reason: verdict.reason };
  }
}

/** Acts on the identity checked right before (the approved one), or, for a call allowed outright, the one there now. */
export async function executeAction(action: ServiceAction, host: HostFor<'services'>, args: ServiceArgs, before: readonly ObservedState[] | undefined): Promise<ToolOutcome> {
  const pinned = serviceAt(before, 0) ?? (await host.services.observe(args.service));
  if (!pinned.exists) throw new ToolRefusal(pinned.status);
  return host.services.act(args.service, action, pinned);
}

export async function actionPostcondition(action: ServiceAction, host: HostFor<'services'>, args: ServiceArgs, before: readonly ObservedState[] | undefined): Promise<Postcondition> {
  const approved = serviceAt(before, 0);
  if (approved === undefined) return { present: false, detail: `${args.service}: nothing was observed before the call` };
  return serviceActionDoneOn(action, approved, await host.services.observe(args.service));
}
