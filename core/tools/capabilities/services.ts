import type { ServiceState } from '../observed-state';
import type { ToolOutcome } from '../outcome';

/**
 * The services named in the tools config, each through its adapter
 * (docker, systemd, process). Only configured names exist here; anything
 * else is `exists: false` from `observe` and refused by the actions.
 */
export interface ServiceCapability {
  /** The configured service names, for reviewers and error messages. */
  readonly names: readonly string[];
  /** The service as it is now; `identity` pins the instance (container id, unit file hash, pid and start time). */
  observe(service: string): Promise<ServiceState>;
  /**
   * Acts on exactly the instance `expected` names (the identity approved or
   * observed right before), and refuses when another instance holds the
   * name now.
   */
  act(service: string, action: 'start' | 'stop' | 'restart', expected: ServiceState): Promise<ToolOutcome>;
}
