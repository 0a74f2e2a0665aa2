import type { ServiceState } from '../../core/tools/observed-state';
import type { ServiceCapability } from '../../core/tools/capabilities/services';
import type { ToolOutcome } from '../../core/tools/outcome';
import { describeIdentity, fromServiceState, toServiceState, type ServiceAction } from '../../core/tools/service-state';
import { act, ServiceIdentityChanged, ServiceMissing, UnknownService, type ServiceAdapter } from './adapter';
import type { Services } from './services';

const done: Record<ServiceAction, string> = { start: 'started', stop: 'stopped', restart: 'restarted' };

function absent(service: string, adapter: string, why: string): ServiceState {
  return { kind: 'service', service, adapter, exists: false, identity: null, running: false, health: 'unknown', status: why, facts: {} };
}

/**
 * The `services` capability the tools worker lends the service tools: the
 * configured services through their adapters. A name not configured, or a
 * container or unit that is not there, is observed as not existing; an
 * action names the identity it was checked against and the adapter acts
 * on that one only.
 */
export function createServiceCapability(services: Services): ServiceCapability {
  return {
    names: services.names,

    async observe(name) {
      let adapter: ServiceAdapter;
      try {
        adapter = services.get(name);
      } catch (err) {
        if (err instanceof UnknownService) return absent(name, 'none', err.message);
        throw err;
      }
      try {
        return toServiceState(await adapter.status());
      } catch (err) {
        if (err instanceof ServiceMissing) return absent(name, adapter.kind, err.message);
        throw err;
      }
    },

    async act(name, action, expected): Promise<ToolOutcome> {
      const adapter = services.get(name);
      const pinned = fromServiceState(expected);
      if (pinned === null || pinned.adapter !== adapter.kind) {
        throw new ServiceIdentityChanged(name, `what the call was checked against is not a ${adapter.kind} service as observed (${expected.status})`);
      }
      const after = await act(adapter, action, pinned.identity);
      const healthNote = action !== 'stop' && after.health !== 'healthy' ? ` (not healthy yet: ${after.health})` : '';
      return { ok: true, output: `${name} ${done[action]}${healthNote}: was ${describeIdentity(pinned.identity)}; now ${after.detail}` };
    },
  };
}
