import { execFile } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { promisify } from 'node:util';
import { lockDataDir } from '../dev/data-lock';
import { isPortFree } from '../dev/ports';
import { TopologyError } from './errors';
import { checkHealth, waitHealthy, type HealthResult } from './health';
import { allPorts, portsFrom, topologyLayout, type TopologyLayout, type TopologyPorts } from './layout';
import { adminUrlOf, airlockEnvOf, cliPath, partSpecs, type PartContext, type PartSpec } from './parts';
import { ensureDatabases, hasSchemaVersion } from './postgres';
import { stillRunning, stopProcess } from './processes';
import { readTopologyState, writeTopologyState, type TopologyPart, type TopologyState } from './state';
import { endpointOf, ensureNamespace, resolveTemporalServer, setupTemporalSchema, writeTemporalConfig } from './temporal-server';

export { TopologyError } from './errors';

const run = promisify(execFile);

export interface TopologyUpInput {
  readonly dir: string;
  readonly basePort: number;
  /** An existing PostgreSQL (a role that may create databases); unset: a private one in the folder. */
  readonly databaseUrl?: string;
  /** The caller's environment: model endpoint, rules and tools config reach the workers from here. */
  readonly env: NodeJS.ProcessEnv;
  readonly log: (line: string) => void;
}

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
