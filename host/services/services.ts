import type { ServicesConfig } from '../../core/config/tools/services';
import { UnknownService, type ServiceAdapter } from './adapter';
import { DockerAdapter } from './docker';
import { DockerEngine } from './docker-engine';
import { ProcessAdapter, type ProcessAdapterOptions } from './process';
import { SystemdAdapter } from './systemd';

export interface ServicesOptions {
  /** Overrides every systemd service's systemctl (tests run a stand-in). */
  readonly systemctl?: string;
  readonly process?: ProcessAdapterOptions;
}

/** The configured services by name, each with the adapter its config chose. */
export class Services {
  private constructor(private readonly adapters: ReadonlyMap<string, ServiceAdapter>) {}

  static fromConfig(config: ServicesConfig, options: ServicesOptions = {}): Services {
    const allowedUnits = new Set(Object.values(config).flatMap((s) => (s.adapter === 'systemd' ? [s.unit] : [])));
    // One Engine client per socket: the API version is negotiated once.
    const engines = new Map<string, DockerEngine>();
    const engineFor = (socket: string, apiVersion: string | undefined) => {
      const key = `${socket}\0${apiVersion ?? ''}`;
      let engine = engines.get(key);
      if (engine === undefined) {
        engine = new DockerEngine(socket, apiVersion);
        engines.set(key, engine);
      }
      return engine;
    };
    const adapters = new Map<string, ServiceAdapter>();
    for (const [name, service] of Object.entries(config)) {
      switch (service.adapter) {
        case 'docker':
          adapters.set(name, new DockerAdapter(name, service, engineFor(service.socket, service.apiVersion)));
          break;
        case 'systemd':
          adapters.set(name, new SystemdAdapter(name, service, { allowedUnits, systemctl: options.systemctl }));
          break;
        case 'process':
          adapters.set(name, new ProcessAdapter(name, service, options.process));
          break;
      }
    }
    return new Services(adapters);
  }

  get names(): string[] {
    return [...this.adapters.keys()].sort();
  }

  get size(): number {
    return this.adapters.size;
  }

  /** The adapter of a configured service; a refusal naming what is configured otherwise. */
  get(name: string): ServiceAdapter {
    const adapter = this.adapters.get(name);
    if (adapter === undefined) throw new UnknownService(name, this.names);
    return adapter;
  }
}
