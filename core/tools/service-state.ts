import { z } from 'zod';
import type { ServiceState } from './observed-state';

/**
 * What a service is (its identity) and how it is (its health), as the
 * service tools observe it for the reviewer and compare again before they
 * act: the reviewer approved acting on *this* container, unit or process.
 */

export const serviceAdapters = ['docker', 'systemd', 'process'] as const;
export type ServiceAdapterKind = (typeof serviceAdapters)[number];

/** `starting` and `unhealthy` are running but not (yet) serving; `stopped` is not running at all. */
export const serviceHealthSchema = z.enum(['healthy', 'starting', 'unhealthy', 'stopped']);
export type ServiceHealth = z.infer<typeof serviceHealthSchema>;

/** What an approval is pinned to. Two observations are the same service exactly when these are equal. */
export const serviceIdentitySchema = z.discriminatedUnion('adapter', [
  z.strictObject({
    adapter: z.literal('docker'),
    /** The Engine never reuses ids: a container recreated under the same name has another. */
    containerId: z.string().regex(/^[0-9a-f]{64}$/),
    /** Its name when observed (shown, not compared: a rename does not make it another container). */
    name: z.string(),
    image: z.string(),
  }),
  z.strictObject({
    adapter: z.literal('systemd'),
    unit: z.string(),
    fragmentPath: z.string(),
    /** sha256 over the unit file and its drop-ins, path and content each. */
    sha256: z.string().regex(/^[0-9a-f]{64}$/),
  }),
  z.strictObject({
    adapter: z.literal('process'),
    pid: z.number().int().positive(),
    /** Start time in clock ticks since boot (/proc/PID/stat field 22): a reused pid has another. */
    startTicks: z.string().regex(/^[0-9]+$/),
    bootId: z.string(),
  }),
]);
export type ServiceIdentity = z.infer<typeof serviceIdentitySchema>;

export const serviceObservationSchema = z.strictObject({
  schemaVersion: z.literal(1),
  service: z.string(),
  adapter: z.enum(serviceAdapters),
  /** Null when there is nothing to pin: a process service that is not running. */
  identity: serviceIdentitySchema.nullable(),
  health: serviceHealthSchema,
  /**
   * Changes whenever the service is (re)started: the container's StartedAt,
   * the unit's InvocationID, the process's start time. Null when stopped.
   */
  instance: z.string().nullable(),
  /** One line for people and the model, e.g. "running, health: unhealthy (failing streak 3)". */
  detail: z.string(),
});
export type ServiceObservation = z.infer<typeof serviceObservationSchema>;

export type ServiceAction = 'start' | 'stop' | 'restart';

/** Short names people recognise: a 12-digit container id, a pid. */
export function describeIdentity(identity: ServiceIdentity | null): string {
  if (identity === null) return 'not running';
  switch (identity.adapter) {
    case 'docker':
      return `container ${identity.containerId.slice(0, 12)} (${identity.name}, image ${identity.image})`;
    case 'systemd':
      return `unit ${identity.unit} from ${identity.fragmentPath} (sha256 ${identity.sha256.slice(0, 12)}…)`;
    case 'process':
      return `pid ${identity.pid}`;
  }
}

export function sameIdentity(a: ServiceIdentity | null, b: ServiceIdentity | null): boolean {
  if (a === null || b === null) return a === b;
  switch (a.adapter) {
    case 'docker':
      return b.adapter === 'docker' && a.containerId === b.containerId;
    case 'systemd':
      return b.adapter === 'systemd' && a.unit === b.unit && a.fragmentPath === b.fragmentPath && a.sha256 === b.sha256;
    case 'process':
      return b.adapter === 'process' && a.pid === b.pid && a.startTicks === b.startTicks && a.bootId === b.bootId;
  }
}

/** Why two identities differ, in words a reviewer or the model can act on. */
export function describeIdentityChange(before: ServiceIdentity | null, now: ServiceIdentity | null): string {
  if (before === null) return `it was not running when the call was approved and now runs as ${describeIdentity(now)}`;
  if (now === null) return `${describeIdentity(before)} is gone (not running now)`;
  if (before.adapter === 'docker' && now.adapter === 'docker') {
    return `the container was replaced: approved ${before.containerId.slice(0, 12)}, now ${now.containerId.slice(0, 12)} has the name ${now.name}`;
  }
  if (before.adapter === 'systemd' && now.adapter === 'systemd') {
    return before.fragmentPath === now.fragmentPath
      ? `the unit file ${now.fragmentPath} (or a drop-in) changed since approval`
      : `the unit now comes from ${now.fragmentPath}, not ${before.fragmentPath}`;
  }
  if (before.adapter === 'process' && now.adapter === 'process') {
    return before.pid === now.pid
      ? `pid ${before.pid} is another process now (its start time differs)`
      : `the process was replaced: approved pid ${before.pid}, now pid ${now.pid}`;
  }
  return `it is now reached through ${now.adapter}, not ${before.adapter}`;
}

/**
 * Whether an approved action still makes sense against the service as it
 * is now: `run`, `refuse` (it is not the service the reviewer saw), or
 * `not_needed` (what the action is for already holds). `reason` is told to
 * the model.
 */
export type ServiceRecheck =
  | { readonly verdict: 'run' }
  | { readonly verdict: 'refuse'; readonly reason: string }
  | { readonly verdict: 'not_needed'; readonly reason: string };

const running = (o: ServiceObservation) => o.health !== 'stopped';

export function recheckServiceAction(action: ServiceAction, before: ServiceObservation, now: ServiceObservation): ServiceRecheck {
  const name = now.service;
  if (before.service !== now.service || before.adapter !== now.adapter) {
    return { verdict: 'refuse', reason: `${before.service} (${before.adapter}) was approved, not ${now.service} (${now.adapter})` };
  }
  const same = sameIdentity(before.identity, now.identity);
  switch (action) {
    case 'stop':
      // The effect holds whoever stopped it: nothing left to do, and nothing to act on.
      if (!running(now)) return { verdict: 'not_needed', reason: `${name} is already stopped (${now.detail}); not stopped again` };
      if (!same) return { verdict: 'refuse', reason: `${name} is not what was approved: ${describeIdentityChange(before.identity, now.identity)}` };
      return { verdict: 'run' };
    case 'start':
      if (running(now) && (same || before.identity === null)) {
        return { verdict: 'not_needed', reason: `${name} is already running (${now.detail}); not started again` };
      }
      if (!same) return { verdict: 'refuse', reason: `${name} is not what was approved: ${describeIdentityChange(before.identity, now.identity)}` };
      return { verdict: 'run' };
    case 'restart':
      if (!same) {
        // Not running at approval, started by someone since and serving: what the restart was for holds.
        if (before.identity === null && now.health === 'healthy') {
          return { verdict: 'not_needed', reason: `${name} was not running when the restart was approved and is running and healthy now (${now.detail}); not restarted` };
        }
        return { verdict: 'refuse', reason: `${name} is not what was approved: ${describeIdentityChange(before.identity, now.identity)}` };
      }
      // Healthy *again*: it was not healthy when the reviewer approved. A
      // restart approved while healthy (say, to load new settings) still runs.
      if (before.health !== 'healthy' && now.health === 'healthy') {
        return { verdict: 'not_needed', reason: `${name} was ${before.health} when the restart was approved and is healthy again now (${now.detail}); not restarted` };
      }
      return { verdict: 'run' };
  }
}

/**
 * Did the action take effect, judged from before (what was approved) and
 * now: the reconciliation of a crash between consuming the approval and
 * recording the outcome.
 */
export function serviceActionDone(action: ServiceAction, before: ServiceObservation, now: ServiceObservation): boolean {
  switch (action) {
    case 'stop':
      return now.health === 'stopped';
    case 'start':
      return now.health !== 'stopped';
    case 'restart':
      return now.health !== 'stopped' && now.instance !== null && now.instance !== before.instance;
  }
}

/*
 * The observed-state union carries a service as a `ServiceState`: identity
 * as one string, the rest as facts. These convert both ways; a state that
 * does not convert back is never acted on.
 */

const identityFacts = (identity: ServiceIdentity | null): Record<string, string | number> => {
  if (identity === null) return {};
  switch (identity.adapter) {
    case 'docker':
      return { name: identity.name, image: identity.image };
    case 'systemd':
      return { unit: identity.unit };
    case 'process':
      return { pid: identity.pid };
  }
};

/** One string per identity: the container id, `sha256:unit file`, `pid:start ticks:boot id`. */
export function encodeIdentity(identity: ServiceIdentity): string {
  switch (identity.adapter) {
    case 'docker':
      return identity.containerId;
    case 'systemd':
      return `${identity.sha256}:${identity.fragmentPath}`;
    case 'process':
      return `${identity.pid}:${identity.startTicks}:${identity.bootId}`;
  }
}

function decodeIdentity(adapter: ServiceAdapterKind, text: string, facts: ServiceState['facts']): ServiceIdentity | null {
  const fact = (key: string) => (typeof facts[key] === 'string' ? facts[key] : '');
  let candidate: unknown;
  switch (adapter) {
    case 'docker':
      candidate = { adapter, containerId: text, name: fact('name'), image: fact('image') };
      break;
    case 'systemd': {
      const colon = text.indexOf(':');
      candidate = { adapter, unit: fact('unit'), sha256: text.slice(0, colon), fragmentPath: text.slice(colon + 1) };
      break;
    }
    case 'process': {
      const [pid, startTicks, bootId] = text.split(':');
      candidate = { adapter, pid: Number(pid), startTicks, bootId };
      break;
    }
  }
  const parsed = serviceIdentitySchema.safeParse(candidate);
  return parsed.success ? parsed.data : null;
}

export function toServiceState(o: ServiceObservation): ServiceState {
  return {
    kind: 'service',
    service: o.service,
    adapter: o.adapter,
    exists: true,
    identity: o.identity === null ? null : encodeIdentity(o.identity),
    running: o.health !== 'stopped',
    health: o.health === 'stopped' ? 'none' : o.health,
    status: o.detail,
    facts: { instance: o.instance, ...identityFacts(o.identity) },
  };
}

/** Back from a stored state; null when it is not a service an adapter observed (missing, unknown, malformed). */
export function fromServiceState(s: ServiceState): ServiceObservation | null {
  if (!s.exists) return null;
  const adapter = serviceAdapters.find((a) => a === s.adapter);
  if (adapter === undefined) return null;
  const identity = s.identity === null ? null : decodeIdentity(adapter, s.identity, s.facts);
  if (s.identity !== null && identity === null) return null;
  const health: ServiceHealth = !s.running ? 'stopped' : s.health === 'healthy' || s.health === 'starting' ? s.health : 'unhealthy';
  const instance = s.facts.instance;
  const parsed = serviceObservationSchema.safeParse({
    schemaVersion: 1,
    service: s.service,
    adapter,
    identity,
    health,
    instance: typeof instance === 'string' ? instance : null,
    detail: s.status,
  });
  return parsed.success ? parsed.data : null;
}

/** `recheckServiceAction` on stored states: a service missing now, or unreadable, is refused. */
export function recheckService(action: ServiceAction, before: ServiceState, now: ServiceState): ServiceRecheck {
  if (!now.exists) return { verdict: 'refuse', reason: now.status };
  const [b, n] = [fromServiceState(before), fromServiceState(now)];
  if (b === null) return { verdict: 'refuse', reason: `${before.service} was not observed as a running or stopped service when the call was approved (${before.status})` };
  if (n === null) return { verdict: 'refuse', reason: `${now.service} cannot be compared with what was approved (${now.status})` };
  return recheckServiceAction(action, b, n);
}

/** The postcondition of a service action, on stored states. */
export function serviceActionDoneOn(action: ServiceAction, before: ServiceState, now: ServiceState): { present: boolean; detail: string } {
  const [b, n] = [fromServiceState(before), fromServiceState(now)];
  if (b === null || n === null) return { present: false, detail: `${now.service}: ${now.status}` };
  return { present: serviceActionDone(action, b, n), detail: `${n.service}: ${n.detail}` };
}
