import { AirlockError } from '../../core/util/errors';
import type { ServiceAction, ServiceAdapterKind, ServiceIdentity, ServiceObservation } from '../../core/tools/service-state';
import { ToolRefusal } from '../../core/tools/tool-refusal';

/**
 * One configured service, reached through its adapter. `status` observes;
 * the actions take the identity a reviewer approved and act on that one
 * only, or refuse with `ServiceIdentityChanged`. Each returns the service
 * as it is after acting.
 */
export interface ServiceAdapter {
  /** The configured name. */
  readonly service: string;
  readonly kind: ServiceAdapterKind;
  /** What it acts on, for people: the container name, the unit, the command. */
  readonly target: string;
  status(): Promise<ServiceObservation>;
  start(pinned: ServiceIdentity | null): Promise<ServiceObservation>;
  stop(pinned: ServiceIdentity | null): Promise<ServiceObservation>;
  restart(pinned: ServiceIdentity | null): Promise<ServiceObservation>;
}

export function act(adapter: ServiceAdapter, action: ServiceAction, pinned: ServiceIdentity | null): Promise<ServiceObservation> {
  switch (action) {
    case 'start':
      return adapter.start(pinned);
    case 'stop':
      return adapter.stop(pinned);
    case 'restart':
      return adapter.restart(pinned);
  }
}

/** The service cannot be reached or would not do it: the Engine, systemctl or the process said no. */
export class ServiceError extends AirlockError {
  override name = 'ServiceError';
  constructor(
    readonly service: string,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(`${service}: ${message}`, options);
  }
}

/** The configured container or unit does not exist (now): observed as not existing, never acted on. */
export class ServiceMissing extends ServiceError {
  override name = 'ServiceMissing';
}

/** What would be acted on is not what was approved (or no longer there): nothing was done. */
export class ServiceIdentityChanged extends ToolRefusal {
  override name = 'ServiceIdentityChanged';
  constructor(
    readonly service: string,
    readonly detail: string,
  ) {
    super(`${service} is not what was approved, nothing was done: ${detail}`);
  }
}

/** A name the model used that no configured service has; the list says what exists. */
export class UnknownService extends ToolRefusal {
  override name = 'UnknownService';
  constructor(
    readonly service: string,
    configured: readonly string[],
  ) {
    super(
      configured.length === 0
        ? `no services are configured; ${JSON.stringify(service)} cannot be reached`
        : `no service named ${JSON.stringify(service)} is configured (configured: ${configured.join(', ')})`,
    );
  }
}
