import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { AIRLOCK_WORKERS, TOPOLOGY_VARIABLES } from '../../ops/topology/parts';
import { TEMPORAL_SERVER_VERSION } from '../../ops/topology/temporal-server';
import { UI_SERVER_VERSION } from '../../ops/topology/ui-server';
import { readRulesFile } from '../../host/config/rules-file';
import { isTaskQueueName, TaskQueues, taskQueueNames, type QueueRole } from '../../core/temporal/task-queues';
import { repoRoot } from '../helpers/processes';

/**
 * Docker cannot run here, so the compose file is held to the topology that
 * CI does run: the same parts, commands, settings and health checks, keys
 * only where they are needed, pinned images; and to the part of the
 * compose specification it uses (unknown keys, unset variables).
 */
const text = readFileSync(join(repoRoot, 'docker-compose.temporal.yml'), 'utf8');
const compose = parse(text, { merge: true }) as Record<string, unknown> & { services: Record<string, Service>; volumes: Record<string, unknown> };

type DependsOn = Record<string, { condition: 'service_started' | 'service_healthy' | 'service_completed_successfully' }>;
interface Service {
  image?: string;
  build?: unknown;
  command?: string[];
  entrypoint?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: string[];
  depends_on?: DependsOn;
  healthcheck?: { test: string[]; interval?: string; timeout?: string; retries?: number; start_period?: string };
  deploy?: { replicas?: number };
  restart?: string;
}

/** The keys of the compose specification this file may use: a typo or an unknown key fails here, as `docker compose config` would. */
const TOP_KEYS = new Set(['name', 'services', 'volumes', 'networks', 'configs', 'secrets']);
const SERVICE_KEYS = new Set(['image', 'build', 'command', 'entrypoint', 'environment', 'volumes', 'ports', 'depends_on', 'healthcheck', 'deploy', 'restart', 'user', 'working_dir', 'networks']);
const HEALTH_KEYS = new Set(['test', 'interval', 'timeout', 'retries', 'start_period', 'start_interval', 'disable']);
const CONDITIONS = new Set(['service_started', 'service_healthy', 'service_completed_successfully']);

const services = Object.entries(compose.services);
const service = (name: string): Service => {
  const found = compose.services[name];
  if (found === undefined) throw new Error(`no service ${name}`);
  return found;
};
/** One-shot jobs run to completion; everything else keeps running and has a health check. */
const oneShots = services.filter(([, s]) => s.restart === 'no').map(([n]) => n);
const longRunning = services.filter(([, s]) => s.restart !== 'no');

test('only keys of the compose specification; every top-level extension is an x- anchor', () => {
  for (const key of Object.keys(compose)) expect(TOP_KEYS.has(key) || key.startsWith('x-')).toBe(true);
  for (const [name, s] of services) {
    expect([name, Object.keys(s).filter((k) => !SERVICE_KEYS.has(k))]).toEqual([name, []]);
    if (s.healthcheck !== undefined) expect([name, Object.keys(s.healthcheck).filter((k) => !HEALTH_KEYS.has(k))]).toEqual([name, []]);
    for (const [dep, { condition }] of Object.entries(s.depends_on ?? {})) {
      expect(compose.services[dep]).toBeDefined();
      expect(CONDITIONS.has(condition)).toBe(true);
    }
    for (const v of s.volumes ?? []) {
      const [source = ''] = v.split(':');
      // A named volume must be declared; a host path starts with `.`, `/` or a variable.
      if (!/^[./$]/.test(source)) expect(Object.keys(compose.volumes)).toContain(source);
    }
  }
});

test('every variable is either given a default or required with a message: none is silently empty', () => {
  const refs = [...text.matchAll(/\$\{([A-Z0-9_]+)([^}]*)\}/g)];
  expect(refs.length).toBeGreaterThan(0);
  for (const [whole, , rest] of refs) expect([whole, /^(:-|:\?)/.test(rest ?? '')]).toEqual([whole, true]);
  // `$$` is the only way to write a shell `$` in a command.
  expect(text.replace(/\$\$/g, '').match(/\$[a-z]/g)).toBeNull();
});

test('images are pinned; the servers are the versions the topology runs; the image builds on a current Node LTS as a non-root user', () => {
  for (const [name, s] of services) {
    if (s.image === undefined) continue;
    expect([name, s.image]).toEqual([name, expect.stringMatching(/:[0-9][0-9A-Za-z.-]*$/)]);
  }
  const bare = (v: string) => v.replace(/^v/, '');
  expect(service('temporal').image).toBe(`temporalio/server:${bare(TEMPORAL_SERVER_VERSION)}`);
  expect(service('temporal-schema').image).toBe(`temporalio/admin-tools:${bare(TEMPORAL_SERVER_VERSION)}`);
  expect(service('temporal-ui').image).toBe(`temporalio/ui:${bare(UI_SERVER_VERSION)}`);
  const version = (JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string }).version;
  for (const [, s] of services.filter(([, s]) => s.image?.startsWith('airlock:'))) expect(s.image).toBe(`airlock:${version}`);
  const dockerfile = readFileSync(join(repoRoot, 'Dockerfile'), 'utf8');
  const bases = [...dockerfile.matchAll(/^FROM node:(\d+)[.\d]*-/gm)].map((m) => Number(m[1]));
  expect(bases.length).toBe(2);
  // Even majors are the LTS lines; Node 20 reached its end of life in April 2026.
  for (const major of bases) expect(major % 2 === 0 && major >= 22).toBe(true);
  expect(dockerfile).toMatch(/^USER node$/m);
  // Every volume an airlock service writes to is a mount point the image gives its user.
  for (const mount of ['/data', '/codec', '/grant', '/grant-public']) expect(dockerfile).toMatch(new RegExp(`chown node:node [^\\n]*${mount}( |$)`, 'm'));
});

test('the same parts as the topology: each worker queue its service and replicas, the codec server, the approval page, setup', async () => {
  const byCommand = (fragment: string) => services.filter(([, s]) => s.command?.join(' ').includes(fragment)).map(([n]) => n);
  // Workers: the topology's processes per queue are the compose replicas.
  const served = new Set<string>();
  for (const entry of new Set(AIRLOCK_WORKERS.map((w) => w.entry))) {
    const [name, ...more] = byCommand(`dist/workers/${entry}.js`);
    expect(more).toEqual([]);
    if (name === undefined) throw new Error(`no service runs ${entry}`);
    expect(service(name).deploy?.replicas).toBe(AIRLOCK_WORKERS.filter((w) => w.entry === entry).length);
    expect(isTaskQueueName(entry)).toBe(true);
    const { roles } = (await import(join(repoRoot, 'workers', `${entry}.ts`))) as { roles: QueueRole[] };
    expect(roles.map((r) => TaskQueues[r])).toEqual([entry]);
    served.add(entry);
  }
  expect([...served].sort()).toEqual([...taskQueueNames].sort());
  expect(byCommand('bin/airlock.js codec-server')).toEqual(['codec-server']);
  expect(byCommand('bin/airlock.js inbox')).toEqual(['inbox']);
  expect(service('airlock-setup').command).toEqual(['node', 'bin/airlock.js', 'setup', '--codec']);
  expect(service('airlock-setup').build).toBe('.');
  expect(oneShots.sort()).toEqual(['airlock-setup', 'temporal-namespace', 'temporal-schema']);
  const rules = await readRulesFile(join(repoRoot, 'rules', 'home-server.yaml'));
  expect(rules.rules.map((r) => r.id)).toContain('approve-deletes');
});

test('every airlock service gets the settings the topology gives its processes, and shares the database', () => {
  const airlock = services.filter(([, s]) => s.image?.startsWith('airlock:'));
  expect(airlock.length).toBeGreaterThanOrEqual(6);
  for (const [name, s] of airlock) {
    const env = Object.keys(s.environment ?? {});
    expect([name, TOPOLOGY_VARIABLES.filter((v) => !env.includes(v))]).toEqual([name, []]);
    expect(s.environment?.AIRLOCK_DATABASE_URL).toMatch(/^postgres:\/\/airlock:\$\{POSTGRES_PASSWORD:\?[^}]+\}@postgresql:5432\/airlock$/);
    expect(s.environment?.AIRLOCK_CODEC_KEYS).toBe('/codec/codec.yaml');
  }
  for (const [name, s] of airlock.filter(([, s]) => s.command?.some((p) => p.startsWith('dist/workers/')))) {
    expect([name, s.environment?.AIRLOCK_METRICS_ADDRESS]).toEqual([name, '0.0.0.0:9464']);
  }
});

test('a health check on every long-running service; services wait for what they need to be healthy or done', () => {
  for (const [name, s] of longRunning) {
    expect([name, Array.isArray(s.healthcheck?.test) && (s.healthcheck?.test.length ?? 0) > 1]).toEqual([name, true]);
  }
  for (const [name, s] of services) {
    for (const [dep, { condition }] of Object.entries(s.depends_on ?? {})) {
      expect([name, dep, condition]).toEqual([name, dep, oneShots.includes(dep) ? 'service_completed_successfully' : 'service_healthy']);
    }
  }
  // Workers report healthy by their metrics endpoint, as in the topology.
  for (const [, s] of services.filter(([, s]) => s.command?.some((p) => p.startsWith('dist/workers/')))) {
    expect(s.healthcheck?.test.join(' ')).toContain('http://127.0.0.1:9464/metrics');
  }
  expect(service('temporal').depends_on?.['temporal-schema']?.condition).toBe('service_completed_successfully');
  expect(service('airlock-setup').depends_on?.['temporal-namespace']?.condition).toBe('service_completed_successfully');
});

test('keys only where needed: tools workers get the public half of the grant key and never the signing key', () => {
  const mounts = (name: string) => (service(name).volumes ?? []).map((v) => v.split(':').slice(0, 2).join(':'));
  expect(mounts('worker-agent')).toEqual(expect.arrayContaining(['airlock-grant:/grant', 'airlock-grant-public:/grant-public']));
  expect(mounts('worker-tools')).toEqual(expect.arrayContaining(['airlock-grant-public:/grant-public']));
  for (const [name] of services.filter(([n]) => n !== 'worker-agent')) expect([name, mounts(name).filter((m) => m.startsWith('airlock-grant:'))]).toEqual([name, []]);
  expect((service('worker-tools').volumes ?? []).find((v) => v.startsWith('airlock-grant-public:'))).toMatch(/:ro$/);
  expect(service('worker-agent').environment?.AIRLOCK_GRANT_KEY).toBe('/grant/grant-ed25519.pem');
  expect(service('worker-tools').environment?.AIRLOCK_GRANT_PUBLIC_KEY).toBe(service('worker-agent').environment?.AIRLOCK_GRANT_PUBLIC_KEY);
  expect(service('worker-tools').environment?.AIRLOCK_GRANT_KEY).toBeUndefined();
  expect(existsSync(join(repoRoot, 'Dockerfile'))).toBe(true);
});
