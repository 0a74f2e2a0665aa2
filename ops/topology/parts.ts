import { join } from 'node:path';
import { loadOrCreateCodecToken } from '../../servers/codec/codec-server';
import { projectRoot } from '../dev/project-root';
import { TopologyError } from './errors';
import type { HealthCheck } from './health';
import type { TopologyLayout, TopologyPorts } from './layout';
import { findPostgresBin, privateUrl, startPrivatePostgres } from './postgres';
import { spawnDetached, type StartedProcess } from './processes';
import type { TopologyState } from './state';
import { resolveTemporalServer, temporalServerArgs } from './temporal-server';
import { resolveUiServer, writeUiConfig } from './ui-server';

/**
 * The processes of the production topology: how each is started, checked
 * and stopped, and the environment airlock's own processes get. `up` starts
 * them in this order; `restart` starts one again from the same plan.
 */

/** The airlock processes of the production shape, as the compose file has them. */
export const AIRLOCK_WORKERS = [
  { name: 'agent-1', entry: 'airlock-agent' },
  { name: 'agent-2', entry: 'airlock-agent' },
  { name: 'tools-1', entry: 'airlock-tools' },
  { name: 'tools-2', entry: 'airlock-tools' },
  { name: 'judge', entry: 'airlock-judge' },
] as const;

/** How long each part may take to become healthy. */
const STARTUP_MS = { postgres: 60_000, temporal: 120_000, other: 60_000 } as const;

/** One process of the topology: how to start it, how to know it works, how to stop it. */
export interface PartSpec {
  readonly name: string;
  readonly start: () => Promise<StartedProcess>;
  readonly health: HealthCheck;
  readonly stopSignal: 'SIGTERM' | 'SIGINT';
  readonly withinMs: number;
}

export interface PartContext {
  readonly input: { readonly env: NodeJS.ProcessEnv; readonly databaseUrl?: string; readonly log: (line: string) => void };
  readonly layout: TopologyLayout;
  readonly ports: TopologyPorts;
  readonly state: TopologyState;
}

/** An admin URL of the topology's PostgreSQL for a database: the private one's, or the one given. */
export function adminUrlOf(ctx: PartContext): (database: string) => string {
  const given = ctx.input.databaseUrl;
  if (given === undefined) return (database) => privateUrl(ctx.layout.postgres, ctx.ports.postgres, database);
  return (database) => Object.assign(new URL(given), { pathname: `/${database}` }).href;
}

/** The environment of every airlock process: the caller's, pointed at this topology. */
export function airlockEnvOf(ctx: PartContext): NodeJS.ProcessEnv {
  const own: Record<TopologyVariable, string> = {
    TEMPORAL_ADDRESS: ctx.state.temporalAddress,
    TEMPORAL_NAMESPACE: 'default',
    AIRLOCK_DATA_DIR: ctx.layout.data,
    AIRLOCK_DATABASE_URL: adminUrlOf(ctx)('airlock'),
    // Notifications link to this topology's approval page and Web UI unless told otherwise.
    AIRLOCK_APPROVAL_PAGE_URL: ctx.input.env.AIRLOCK_APPROVAL_PAGE_URL ?? ctx.state.approvalPage,
    AIRLOCK_WEB_UI_URL: ctx.input.env.AIRLOCK_WEB_UI_URL ?? ctx.state.webUi,
  };
  return { ...withoutPerProcess(ctx.input.env), ...own };
}

export const cliPath = () => join(projectRoot(), 'bin', 'airlock.js');

/** The processes of the topology in start order (after the database and schema are ready). */
export async function partSpecs(ctx: PartContext): Promise<PartSpec[]> {
  const { input, layout, ports, state } = ctx;
  const { env, log } = input;
  const binaries = await resolveTemporalServer(env, log);
  const uiServer = await resolveUiServer(env, log);
  const airlockEnv = airlockEnvOf(ctx);
  const cli = cliPath();
  const bare = { PATH: env.PATH, HOME: env.HOME };
  const specs: PartSpec[] = [];
  if (input.databaseUrl === undefined) {
    specs.push({
      name: 'postgres',
      start: () => startPrivatePostgres({ bin: findPostgresBin(env), folder: layout.postgres, data: layout.postgresData, port: ports.postgres, log: layout.log('postgres') }),
      health: { kind: 'postgres', url: adminUrlOf(ctx)('postgres') },
      stopSignal: 'SIGINT',
      withinMs: STARTUP_MS.postgres,
    });
  }
  const server = temporalServerArgs(layout.temporal);
  specs.push({
    name: 'temporal',
    start: async () => spawnDetached({ command: binaries.server, args: server.args, cwd: server.cwd, env: bare, log: layout.log('temporal') }),
    health: { kind: 'temporal', address: state.temporalAddress },
    stopSignal: 'SIGTERM',
    withinMs: STARTUP_MS.temporal,
  });
  specs.push({
    name: 'codec-server',
    start: async () =>
      spawnDetached({ command: process.execPath, args: [cli, 'codec-server', '--port', String(ports.codec)], env: { ...airlockEnv, AIRLOCK_CODEC_UI_ORIGIN: state.webUi }, log: layout.log('codec-server') }),
    health: { kind: 'http', url: `http://127.0.0.1:${ports.codec}/`, accept: 'any' },
    stopSignal: 'SIGTERM',
    withinMs: STARTUP_MS.other,
  });
  specs.push({
    name: 'ui',
    start: async () => {
      const token = loadOrCreateCodecToken(join(layout.data, 'keys', 'codec-server.token'));
      const ui = writeUiConfig({ folder: layout.ui, temporalAddress: state.temporalAddress, port: ports.ui, codecEndpoint: `http://127.0.0.1:${ports.codec}/${token}` });
      return spawnDetached({ command: uiServer, args: ui.args, cwd: ui.cwd, env: bare, log: layout.log('ui') });
    },
    health: { kind: 'http', url: `${state.webUi}/`, accept: '2xx' },
    stopSignal: 'SIGTERM',
    withinMs: STARTUP_MS.other,
  });
  specs.push({
    name: 'inbox',
    start: async () =>
      spawnDetached({ command: process.execPath, args: [cli, 'inbox', '--listen', `127.0.0.1:${ports.inbox}`], env: airlockEnv, log: layout.log('inbox') }),
    health: { kind: 'http', url: `${state.approvalPage}/`, accept: '2xx' },
    stopSignal: 'SIGTERM',
    withinMs: STARTUP_MS.other,
  });
  // The workers, one process per compose service replica; each serves its metrics, its health check.
  for (const [i, worker] of AIRLOCK_WORKERS.entries()) {
    const metrics = ports.metrics[i];
    if (metrics === undefined) throw new TopologyError(`no metrics port planned for ${worker.name}`);
    specs.push({
      name: worker.name,
      start: async () =>
        spawnDetached({
          command: process.execPath,
          args: [join(projectRoot(), 'dist', 'workers', `${worker.entry}.js`)],
          env: { ...airlockEnv, AIRLOCK_METRICS_ADDRESS: `127.0.0.1:${metrics}` },
          log: layout.log(worker.name),
        }),
      health: { kind: 'http', url: `http://127.0.0.1:${metrics}/metrics`, accept: '2xx' },
      stopSignal: 'SIGTERM',
      withinMs: STARTUP_MS.other,
    });
  }
  return specs;
}

/**
 * What the topology sets on every airlock process (the compose file's
 * `x-airlock-env` sets the same); workers get AIRLOCK_METRICS_ADDRESS too.
 */
export const TOPOLOGY_VARIABLES = ['TEMPORAL_ADDRESS', 'TEMPORAL_NAMESPACE', 'AIRLOCK_DATA_DIR', 'AIRLOCK_DATABASE_URL', 'AIRLOCK_APPROVAL_PAGE_URL', 'AIRLOCK_WEB_UI_URL'] as const;
type TopologyVariable = (typeof TOPOLOGY_VARIABLES)[number];

/** Settings the topology gives each process itself. */
function withoutPerProcess(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  const rest = { ...env };
  for (const name of [...TOPOLOGY_VARIABLES, 'AIRLOCK_METRICS_ADDRESS', 'AIRLOCK_INBOX_LISTEN']) delete rest[name];
  // The topology's server is plain and local: none of the caller's Temporal connection settings or profiles apply to it.
  for (const name of Object.keys(rest)) if (name.startsWith('TEMPORAL_')) delete rest[name];
  return { ...rest, TEMPORAL_CONFIG_FILE: '' };
}
