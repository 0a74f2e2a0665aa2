import { execFile } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { AirlockError } from '../../core/util/errors';
import { loadOrCreateCodecToken } from '../dev/codec-server';
import { lockDataDir } from '../dev/data-lock';
import { isPortFree } from '../dev/ports';
import { projectRoot } from '../dev/project-root';
import { checkHealth, waitHealthy, type HealthCheck, type HealthResult } from './health';
import { allPorts, portsFrom, topologyLayout, type TopologyLayout, type TopologyPorts } from './layout';
import { ensureDatabases, findPostgresBin, privateUrl, startPrivatePostgres } from './postgres';
import { spawnDetached, stillRunning, stopProcess, type StartedProcess } from './processes';
import { readTopologyState, writeTopologyState, type TopologyPart, type TopologyState } from './state';
import { endpointOf, ensureNamespace, resolveTemporalServer, setupTemporalSchema, temporalServerArgs, writeTemporalConfig } from './temporal-server';
import { resolveUiServer, writeUiConfig } from './ui-server';

const run = promisify(execFile);

/** A topology cannot be started, or is already running in that folder. */
export class TopologyError extends AirlockError {
  override name = 'TopologyError';
}

export interface TopologyUpInput {
  readonly dir: string;
  readonly basePort: number;
  /** An existing PostgreSQL (a role that may create databases); unset: a private one in the folder. */
  readonly databaseUrl?: string;
  /** The caller's environment: model endpoint, rules and tools config reach the workers from here. */
  readonly env: NodeJS.ProcessEnv;
  readonly log: (line: string) => void;
}

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

/**
 * Starts the production shape in one folder: PostgreSQL, the Temporal
 * server on it, the Web UI, then airlock's processes, each waited for until
 * its health check passes. What this call started is written to the state
 * file as it goes, so `down` can stop it even after a failed `up`; a failed
 * `up` stops what it started itself.
 */
export async function topologyUp(input: TopologyUpInput): Promise<TopologyState> {
  const layout = topologyLayout(input.dir);
  // A root caller runs the private PostgreSQL as `postgres`, which must pass through this folder (not list it).
  mkdirSync(layout.root, { recursive: true, mode: process.getuid?.() === 0 ? 0o711 : 0o700 });
  const lock = lockDataDir(layout.root, {
    name: 'topology.lock',
    locked: (holder) => new TopologyError(`another airlock topology up (pid ${holder}) is starting ${layout.root}; wait for it`),
  });
  try {
    const previous = readTopologyState(layout.state);
    const running = previous?.parts.filter((p) => stillRunning(p)) ?? [];
    if (running.length > 0) {
      throw new TopologyError(
        `a topology already runs in ${layout.root} (${running.map((p) => `${p.name} pid ${p.pid}`).join(', ')}): \`airlock topology status --dir ${input.dir}\` shows it; \`airlock topology down --dir ${input.dir}\` stops it`,
      );
    }
    const ports = portsFrom(input.basePort);
    await requirePortsFree(ports, input.databaseUrl === undefined);
    const state: TopologyState = {
      schemaVersion: 1,
      basePort: input.basePort,
      temporalAddress: `127.0.0.1:${ports.temporal}`,
      webUi: `http://127.0.0.1:${ports.ui}`,
      approvalPage: `http://127.0.0.1:${ports.inbox}`,
      ...(input.databaseUrl !== undefined ? { databaseUrl: input.databaseUrl } : {}),
      parts: [],
    };
    writeTopologyState(layout.state, state);
    try {
      await startAll(input, layout, ports, state);
    } catch (err) {
      input.log(`airlock: topology up failed; stopping what it started`);
      await stopParts(state.parts, input.log);
      rmSync(layout.state, { force: true });
      throw err;
    }
    return state;
  } finally {
    lock.release();
  }
}

async function requirePortsFree(ports: TopologyPorts, privateDatabase: boolean): Promise<void> {
  const taken: number[] = [];
  for (const port of allPorts(ports, privateDatabase)) if (!(await isPortFree(port))) taken.push(port);
  if (taken.length > 0) {
    throw new TopologyError(`ports ${taken.join(', ')} are in use on 127.0.0.1: choose another --base-port (the topology uses ${ports.temporal}–${ports.codec})`);
  }
}

/** One process of the topology: how to start it, how to know it works, how to stop it. */
interface PartSpec {
  readonly name: string;
  readonly start: () => Promise<StartedProcess>;
  readonly health: HealthCheck;
  readonly stopSignal: 'SIGTERM' | 'SIGINT';
  readonly withinMs: number;
}

interface PartContext {
  readonly input: Pick<TopologyUpInput, 'env' | 'databaseUrl' | 'log'>;
  readonly layout: TopologyLayout;
  readonly ports: TopologyPorts;
  readonly state: TopologyState;
}

/** An admin URL of the topology's PostgreSQL for a database: the private one's, or the one given. */
function adminUrlOf(ctx: PartContext): (database: string) => string {
  const given = ctx.input.databaseUrl;
  if (given === undefined) return (database) => privateUrl(ctx.layout.postgres, ctx.ports.postgres, database);
  return (database) => Object.assign(new URL(given), { pathname: `/${database}` }).href;
}

/** The environment of every airlock process: the caller's, pointed at this topology. */
function airlockEnvOf(ctx: PartContext): NodeJS.ProcessEnv {
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

const cliPath = () => join(projectRoot(), 'bin', 'airlock.js');

/** The processes of the topology in start order (after the database and schema are ready). */
async function partSpecs(ctx: PartContext): Promise<PartSpec[]> {
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

/** Starts one part, records it in the state file, and waits for its health check. */
async function startPart(ctx: PartContext, spec: PartSpec): Promise<void> {
  const started = await spec.start();
  const part: TopologyPart = { name: spec.name, pid: started.pid, startTime: started.startTime, stopSignal: spec.stopSignal, health: spec.health, log: ctx.layout.log(spec.name) };
  const at = ctx.state.parts.findIndex((p) => p.name === spec.name);
  if (at >= 0) ctx.state.parts[at] = part;
  else ctx.state.parts.push(part);
  writeTopologyState(ctx.layout.state, ctx.state);
  const result = await waitHealthy(spec.health, spec.withinMs, () => stillRunning(part));
  if (!result.healthy) throw new TopologyError(`${spec.name} did not become healthy within ${Math.round(spec.withinMs / 1000)} s (${result.detail}); see ${part.log}`);
  ctx.input.log(`airlock: ${spec.name} healthy (pid ${started.pid}; ${result.detail})`);
}

async function startAll(input: TopologyUpInput, layout: TopologyLayout, ports: TopologyPorts, state: TopologyState): Promise<void> {
  const ctx: PartContext = { input, layout, ports, state };
  const specs = await partSpecs(ctx);
  const byName = (name: string) => specs.find((s) => s.name === name);
  const adminUrl = adminUrlOf(ctx);

  // PostgreSQL: the private server, or the one given; then the databases and Temporal's schema.
  const postgres = byName('postgres');
  if (postgres !== undefined) await startPart(ctx, postgres);
  else {
    const reached = await checkHealth({ kind: 'postgres', url: adminUrl('postgres') });
    if (!reached.healthy) throw new TopologyError(`--database-url: cannot reach PostgreSQL (${reached.detail})`);
  }
  const fresh = { temporal: !(await hasSchemaVersion(adminUrl, 'temporal')), visibility: !(await hasSchemaVersion(adminUrl, 'temporal_visibility')) };
  await ensureDatabases(adminUrl('postgres'), ['temporal', 'temporal_visibility', 'airlock']);
  const db = endpointOf(adminUrl('postgres'));
  const binaries = await resolveTemporalServer(input.env, input.log);
  await setupTemporalSchema(binaries.sqlTool, db, fresh);
  writeTemporalConfig(layout.temporal, ports, db);

  // The server, its namespace, and airlock's setup: search attributes, its database schema, payload keys (on in production).
  const temporal = byName('temporal');
  if (temporal === undefined) throw new TopologyError('the plan has no Temporal server');
  await startPart(ctx, temporal);
  await ensureNamespace({ address: state.temporalAddress }, 'default');
  try {
    const setup = await run(process.execPath, [cliPath(), 'setup', '--codec'], { env: airlockEnvOf(ctx) });
    for (const line of setup.stdout.trim().split('\n')) if (line !== '') input.log(`airlock setup: ${line}`);
  } catch (err) {
    throw new TopologyError(`airlock setup failed: ${((err as { stderr?: string }).stderr ?? String(err)).trim()}`);
  }
  for (const spec of specs) if (spec.name !== 'postgres' && spec.name !== 'temporal') await startPart(ctx, spec);
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

async function hasSchemaVersion(url: (database: string) => string, database: string): Promise<boolean> {
  const { Client } = await import('pg');
  const client = new Client({ connectionString: url(database) });
  try {
    await client.connect();
  } catch {
    // No such database yet.
    return false;
  }
  try {
    const found = await client.query("select 1 from information_schema.tables where table_name = 'schema_version'");
    return (found.rowCount ?? 0) > 0;
  } finally {
    await client.end();
  }
}

async function stopParts(parts: readonly TopologyPart[], log: (line: string) => void): Promise<void> {
  for (const part of [...parts].reverse()) {
    const outcome = await stopProcess(part, 20_000, part.stopSignal);
    log(`airlock: ${part.name} ${outcome === 'stopped' ? 'stopped' : 'was not running'}`);
  }
}

/** Stops what `up` started in this folder (only those processes, by pid and start time), last started first. */
export async function topologyDown(dir: string, log: (line: string) => void): Promise<{ readonly stopped: number }> {
  const layout = topologyLayout(dir);
  const state = readTopologyState(layout.state);
  if (state === undefined) throw new TopologyError(`no topology was started in ${layout.root} (no ${layout.state})`);
  const lock = lockDataDir(layout.root, { name: 'topology.lock', locked: (holder) => new TopologyError(`airlock topology up (pid ${holder}) is still starting ${layout.root}; wait for it`) });
  try {
    const before = state.parts.filter((p) => stillRunning(p)).length;
    await stopParts(state.parts, log);
    rmSync(layout.state, { force: true });
    return { stopped: before };
  } finally {
    lock.release();
  }
}

/**
 * Restarts one part of a running topology with the same plan (the
 * caller's environment, as `up` had it): stopped if it still runs, started,
 * and waited for. What `restart: unless-stopped` does in compose, by hand.
 */
export async function topologyRestart(input: { readonly dir: string; readonly part: string; readonly env: NodeJS.ProcessEnv; readonly log: (line: string) => void }): Promise<void> {
  const layout = topologyLayout(input.dir);
  const state = readTopologyState(layout.state);
  if (state === undefined) throw new TopologyError(`no topology runs in ${layout.root} (no ${layout.state}); start one with \`airlock topology up --dir ${input.dir}\``);
  const lock = lockDataDir(layout.root, { name: 'topology.lock', locked: (holder) => new TopologyError(`airlock topology (pid ${holder}) is changing ${layout.root}; wait for it`) });
  try {
    const ctx: PartContext = { input: { ...input, ...(state.databaseUrl !== undefined ? { databaseUrl: state.databaseUrl } : {}) }, layout, ports: portsFrom(state.basePort), state };
    const specs = await partSpecs(ctx);
    const spec = specs.find((s) => s.name === input.part);
    if (spec === undefined) throw new TopologyError(`no part ${JSON.stringify(input.part)} in this topology; its parts: ${specs.map((s) => s.name).join(', ')}`);
    const current = state.parts.find((p) => p.name === input.part);
    if (current !== undefined && (await stopProcess(current, 20_000, current.stopSignal)) === 'stopped') input.log(`airlock: ${input.part} stopped`);
    await startPart(ctx, spec);
  } finally {
    lock.release();
  }
}

export interface PartStatus {
  readonly name: string;
  readonly pid: number;
  readonly running: boolean;
  readonly health: HealthResult;
  readonly log: string;
}

/** Every part: its process, and its health check now. */
export async function topologyStatus(dir: string): Promise<{ readonly state: TopologyState; readonly parts: readonly PartStatus[] }> {
  const layout = topologyLayout(dir);
  const state = readTopologyState(layout.state);
  if (state === undefined) throw new TopologyError(`no topology runs in ${layout.root} (no ${layout.state}); start one with \`airlock topology up --dir ${dir}\``);
  const parts = await Promise.all(
    state.parts.map(async (p) => {
      const running = stillRunning(p);
      const health: HealthResult = running ? await checkHealth(p.health) : { healthy: false, detail: 'not running' };
      return { name: p.name, pid: p.pid, running, health, log: p.log };
    }),
  );
  return { state, parts };
}
