import { join, resolve } from 'node:path';

/**
 * The ports of one topology, derived from one base (the Temporal frontend)
 * so two topologies on one machine need only two bases. With the default
 * base 7233 the Web UI, approval page and codec server sit on their usual
 * ports (8233, 7244, 8234).
 */
export interface TopologyPorts {
  readonly temporal: number;
  readonly temporalHttp: number;
  readonly history: number;
  readonly matching: number;
  readonly internalWorker: number;
  /** Membership (ringpop) ports of frontend, history, matching and worker. */
  readonly membership: readonly [number, number, number, number];
  readonly inbox: number;
  /** The private PostgreSQL's port (unused with an external database). */
  readonly postgres: number;
  /** One Prometheus endpoint per airlock worker process, its health check. */
  readonly metrics: readonly number[];
  readonly ui: number;
  readonly codec: number;
}

export const DEFAULT_BASE_PORT = 7233;
/** Temporal stores membership ports (base+20…23) as smallint: they must stay below 32768. */
export const MAX_BASE_PORT = 32_000;

export function portsFrom(base: number): TopologyPorts {
  return {
    temporal: base,
    history: base + 1,
    matching: base + 2,
    internalWorker: base + 3,
    temporalHttp: base + 10,
    inbox: base + 11,
    membership: [base + 20, base + 21, base + 22, base + 23],
    postgres: base + 30,
    metrics: [base + 40, base + 41, base + 42, base + 43, base + 44],
    ui: base + 1000,
    codec: base + 1001,
  };
}

/** Every port of the plan, for the check that they are free before anything starts. */
export function allPorts(ports: TopologyPorts, privateDatabase: boolean): number[] {
  return [
    ports.temporal,
    ports.history,
    ports.matching,
    ports.internalWorker,
    ports.temporalHttp,
    ports.inbox,
    ...ports.membership,
    ...(privateDatabase ? [ports.postgres] : []),
    ...ports.metrics,
    ports.ui,
    ports.codec,
  ];
}

/** Where a topology keeps everything: one folder, removable as a whole once it is down. */
export function topologyLayout(dir: string) {
  const root = resolve(dir);
  return {
    root,
    /** What `up` started (pids, start times, health checks): `down` stops only these. */
    state: join(root, 'topology.json'),
    /** Held while `up` runs, so two `up`s on one folder cannot interleave. */
    lock: join(root, 'topology.lock'),
    postgres: join(root, 'postgres'),
    postgresData: join(root, 'postgres', 'data'),
    temporal: join(root, 'temporal'),
    /** airlock's data folder for every process of the topology (keys; the state lives in the database). */
    data: join(root, 'data'),
    ui: join(root, 'ui'),
    logs: join(root, 'logs'),
    log: (name: string) => join(root, 'logs', `${name}.log`),
  };
}

export type TopologyLayout = ReturnType<typeof topologyLayout>;
