import { z } from 'zod';
import type { DockerServiceConfig } from '../../core/config/tools/services';
import { describeIdentity, type ServiceHealth, type ServiceIdentity, type ServiceObservation } from '../../core/tools/service-state';
import { ServiceError, ServiceIdentityChanged, ServiceMissing, type ServiceAdapter } from './adapter';
import { describeBody, EngineError, type DockerEngine } from './docker-engine';

/**
 * A container through the Docker Engine API. `status` finds it by its
 * configured name; every action names the container by the id the
 * reviewer saw, so an approval can never reach another container that
 * later takes the name (the Engine never reuses ids).
 */

const containerId = z.string().regex(/^[0-9a-f]{64}$/, 'not a container id');

/** The fields of GET /containers/{id}/json that the adapter reads; the rest is ignored. */
const inspectSchema = z.object({
  Id: containerId,
  Name: z.string(),
  Config: z.object({ Image: z.string() }).partial().nullish(),
  State: z.object({
    Status: z.string(),
    Running: z.boolean(),
    Paused: z.boolean().optional(),
    Restarting: z.boolean().optional(),
    StartedAt: z.string().optional(),
    ExitCode: z.number().optional(),
    Health: z.object({ Status: z.string(), FailingStreak: z.number().optional() }).nullish(),
  }),
});
type Inspected = z.infer<typeof inspectSchema>;

function healthOf(state: Inspected['State']): { health: ServiceHealth; detail: string } {
  if (state.Paused === true) return { health: 'unhealthy', detail: 'paused' };
  if (state.Restarting === true) return { health: 'starting', detail: 'restarting' };
  if (!state.Running) return { health: 'stopped', detail: `${state.Status}${state.ExitCode !== undefined ? `, exit code ${state.ExitCode}` : ''}` };
  const check = state.Health?.Status;
  switch (check) {
    case undefined:
    case 'none':
      // No healthcheck: running is all the Engine can tell.
      return { health: 'healthy', detail: 'running (no healthcheck)' };
    case 'healthy':
      return { health: 'healthy', detail: 'running, health: healthy' };
    case 'starting':
      return { health: 'starting', detail: 'running, health: starting' };
    default: {
      const streak = state.Health?.FailingStreak;
      return { health: 'unhealthy', detail: `running, health: ${check}${streak !== undefined && streak > 0 ? ` (failing streak ${streak})` : ''}` };
    }
  }
}

export class DockerAdapter implements ServiceAdapter {
  readonly kind = 'docker';
  readonly target: string;

  constructor(
    readonly service: string,
    private readonly config: DockerServiceConfig,
    private readonly engine: DockerEngine,
  ) {
    this.target = `container ${config.container}`;
  }

  private fail(err: unknown, doing: string): never {
    if (err instanceof ServiceError || err instanceof ServiceIdentityChanged) throw err;
    if (err instanceof EngineError) throw new ServiceError(this.service, `${doing}: ${err.message}`, { cause: err });
    throw err;
  }

  /** GET /containers/{ref}/json; null when the Engine does not know `ref`. */
  private async inspect(ref: string): Promise<Inspected | null> {
    const res = await this.engine.call('GET', `/containers/${encodeURIComponent(ref)}/json`);
    if (res.status === 404) return null;
    if (res.status !== 200) throw new EngineError(`the Docker Engine answered ${res.status}${describeBody(res.body)}`, res.status);
    let json: unknown;
    try {
      json = JSON.parse(res.body);
    } catch {
      throw new EngineError('the Docker Engine answered with something that is not JSON');
    }
    const parsed = inspectSchema.safeParse(json);
    if (!parsed.success) throw new EngineError(`the Docker Engine's container description is not what airlock reads (${parsed.error.issues[0]?.message ?? 'invalid'})`);
    return parsed.data;
  }

  private observation(c: Inspected): ServiceObservation {
    const { health, detail } = healthOf(c.State);
    const identity: ServiceIdentity = {
      adapter: 'docker',
      containerId: c.Id,
      name: c.Name.replace(/^\//, ''),
      image: c.Config?.Image ?? 'unknown image',
    };
    return {
      schemaVersion: 1,
      service: this.service,
      adapter: 'docker',
      identity,
      health,
      instance: c.State.Running && c.State.StartedAt !== undefined ? c.State.StartedAt : null,
      detail: `${detail}; ${describeIdentity(identity)}`,
    };
  }

  async status(): Promise<ServiceObservation> {
    try {
      const found = await this.inspect(this.config.container);
      if (found === null) throw new ServiceMissing(this.service, `no container named ${this.config.container} exists`);
      return this.observation(found);
    } catch (err) {
      this.fail(err, `cannot read container ${this.config.container}`);
    }
  }

  private pinnedId(pinned: ServiceIdentity | null): string {
    if (pinned?.adapter !== 'docker') {
      throw new ServiceIdentityChanged(this.service, `no container was pinned when the call was prepared (${describeIdentity(pinned)})`);
    }
    return pinned.containerId;
  }

  /** POST /containers/{id}/{verb}: 204 done, 304 already so; 404 means the approved container is gone. */
  private async post(pinned: ServiceIdentity | null, verb: 'start' | 'stop' | 'restart'): Promise<ServiceObservation> {
    const id = this.pinnedId(pinned);
    const wait = this.config.stopTimeoutSeconds;
    const query = verb === 'start' ? '' : `?t=${wait}`;
    try {
      // The Engine answers a stop or restart once the container has stopped: up to `t` seconds.
      const res = await this.engine.call('POST', `/containers/${id}/${verb}${query}`, 30_000 + wait * 1000);
      if (res.status === 404) {
        throw new ServiceIdentityChanged(this.service, `container ${id.slice(0, 12)} no longer exists (removed or recreated); whatever now has the name ${this.config.container} was not touched`);
      }
      if (res.status === 409) throw new ServiceError(this.service, `the Docker Engine refused to ${verb} container ${id.slice(0, 12)}${describeBody(res.body)}`);
      if (res.status !== 204 && res.status !== 304) {
        throw new ServiceError(this.service, `the Docker Engine answered ${res.status} to ${verb} container ${id.slice(0, 12)}${describeBody(res.body)}`);
      }
      const after = await this.inspect(id);
      if (after === null) throw new ServiceError(this.service, `container ${id.slice(0, 12)} disappeared right after ${verb}`);
      return this.observation(after);
    } catch (err) {
      this.fail(err, `cannot ${verb} container ${id.slice(0, 12)}`);
    }
  }

  start(pinned: ServiceIdentity | null): Promise<ServiceObservation> {
    return this.post(pinned, 'start');
  }

  stop(pinned: ServiceIdentity | null): Promise<ServiceObservation> {
    return this.post(pinned, 'stop');
  }

  restart(pinned: ServiceIdentity | null): Promise<ServiceObservation> {
    return this.post(pinned, 'restart');
  }
}
