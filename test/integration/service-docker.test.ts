import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { servicesConfigSchema } from '../../core/config/tools/services';
import { recheckServiceAction } from '../../core/tools/service-state';
import { ServiceError, ServiceIdentityChanged, type ServiceAdapter } from '../../host/services/adapter';
import { Services } from '../../host/services/services';
import { startFakeEngine, type FakeEngine } from '../helpers/fake-docker-engine';
import { repoRoot } from '../helpers/processes';

let dir: string;
let engine: FakeEngine;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-docker-'));
  engine = await startFakeEngine(join(dir, 'docker.sock'));
});
afterEach(async () => {
  await engine.close();
  rmSync(dir, { recursive: true, force: true });
});

function jellyfin(extra: Record<string, unknown> = {}): ServiceAdapter {
  const config = servicesConfigSchema.parse({ jellyfin: { adapter: 'docker', container: 'jellyfin', socket: engine.socketPath, ...extra } });
  return Services.fromConfig(config).get('jellyfin');
}

test('status finds the container by name over the socket: exact requests, identity is the full id, health from State.Health', async () => {
  const c = engine.add('jellyfin', { health: 'unhealthy' });
  const seen = await jellyfin().status();
  expect(engine.requests).toEqual(['GET /_ping', 'GET /v1.47/containers/jellyfin/json']);
  expect(seen).toEqual({
    schemaVersion: 1,
    service: 'jellyfin',
    adapter: 'docker',
    identity: { adapter: 'docker', containerId: c.Id, name: 'jellyfin', image: 'jellyfin/jellyfin:10.10' },
    health: 'unhealthy',
    instance: c.State.StartedAt,
    detail: `running, health: unhealthy (failing streak 3); container ${c.Id.slice(0, 12)} (jellyfin, image jellyfin/jellyfin:10.10)`,
  });
});

test.each([
  [{ health: 'healthy' }, 'healthy'],
  [{ health: 'starting' }, 'starting'],
  [{}, 'healthy'],
  [{ running: false }, 'stopped'],
])('container %j is %s', async (options, health) => {
  engine.add('jellyfin', options);
  expect((await jellyfin().status()).health).toBe(health);
});

test('restart acts on the pinned id: the exact method and path, then the state after', async () => {
  const c = engine.add('jellyfin', { health: 'unhealthy' });
  const adapter = jellyfin({ stopTimeoutSeconds: 20 });
  const approved = await adapter.status();
  const after = await adapter.restart(approved.identity);
  expect(engine.requests).toEqual([
    'GET /_ping',
    'GET /v1.47/containers/jellyfin/json',
    `POST /v1.47/containers/${c.Id}/restart?t=20`,
    `GET /v1.47/containers/${c.Id}/json`,
  ]);
  expect(c.actions).toEqual(['restart']);
  expect(after).toMatchObject({ health: 'starting', identity: { containerId: c.Id } });
  expect(after.instance).not.toBe(approved.instance);
});

test('stop and start post to the pinned id; a container already in that state is a 304, not an error', async () => {
  const c = engine.add('jellyfin');
  const adapter = jellyfin();
  const pinned = (await adapter.status()).identity;
  expect((await adapter.stop(pinned)).health).toBe('stopped');
  expect((await adapter.stop(pinned)).health).toBe('stopped');
  expect((await adapter.start(pinned)).health).toBe('healthy');
  expect(engine.requests.filter((r) => r.startsWith('POST'))).toEqual([
    `POST /v1.47/containers/${c.Id}/stop?t=10`,
    `POST /v1.47/containers/${c.Id}/stop?t=10`,
    `POST /v1.47/containers/${c.Id}/start`,
  ]);
  expect(c.actions).toEqual(['stop', 'start']);
});

test('a container recreated under the same name after approval is never touched', async () => {
  const approvedContainer = engine.add('jellyfin', { health: 'unhealthy' });
  const adapter = jellyfin();
  const approved = await adapter.status();

  const newcomer = engine.recreate('jellyfin');
  const now = await adapter.status();
  expect(recheckServiceAction('restart', approved, now)).toEqual({
    verdict: 'refuse',
    reason: `jellyfin is not what was approved: the container was replaced: approved ${approvedContainer.Id.slice(0, 12)}, now ${newcomer.Id.slice(0, 12)} has the name jellyfin`,
  });
  // Even without the recheck, the action names the approved id and the Engine finds none.
  await expect(adapter.restart(approved.identity)).rejects.toThrow(ServiceIdentityChanged);
  await expect(adapter.stop(approved.identity)).rejects.toThrow(
    `jellyfin is not what was approved, nothing was done: container ${approvedContainer.Id.slice(0, 12)} no longer exists (removed or recreated); whatever now has the name jellyfin was not touched`,
  );
  expect(newcomer.actions).toEqual([]);
  expect(engine.requests.filter((r) => r.includes(newcomer.Id))).toEqual([]);
  expect(engine.requests.filter((r) => r.startsWith('POST'))).toEqual([
    `POST /v1.47/containers/${approvedContainer.Id}/restart?t=10`,
    `POST /v1.47/containers/${approvedContainer.Id}/stop?t=10`,
  ]);
});

test('a configured API version is used as is, without /_ping', async () => {
  engine.add('jellyfin');
  const other = await startFakeEngine(join(dir, 'old.sock'), '1.41');
  try {
    const config = servicesConfigSchema.parse({ jf: { adapter: 'docker', container: 'jellyfin', socket: other.socketPath, apiVersion: '1.41' } });
    await expect(Services.fromConfig(config).get('jf').status()).rejects.toThrow('jf: no container named jellyfin exists');
    expect(other.requests).toEqual(['GET /v1.41/containers/jellyfin/json']);
  } finally {
    await other.close();
  }
});

test('Engine errors become one clear line: unknown container, 409, missing socket', async () => {
  await expect(jellyfin().status()).rejects.toThrow(new ServiceError('jellyfin', 'no container named jellyfin exists'));

  const c = engine.add('jellyfin');
  const adapter = jellyfin();
  const pinned = (await adapter.status()).identity;
  c.State.Paused = true;
  await expect(adapter.restart(pinned)).rejects.toThrow(
    `jellyfin: the Docker Engine refused to restart container ${c.Id.slice(0, 12)}: cannot restart container: ${c.Id} is paused, unpause the container before stopping or killing`,
  );
  expect((await adapter.status()).health).toBe('unhealthy');

  const missing = Services.fromConfig(servicesConfigSchema.parse({ jf: { adapter: 'docker', container: 'jellyfin', socket: join(dir, 'nope.sock') } })).get('jf');
  await expect(missing.status()).rejects.toThrow(
    `jf: cannot read container jellyfin: the Docker socket ${join(dir, 'nope.sock')} does not exist (is Docker running, and is the socket mounted where the tools worker runs?)`,
  );
});

test('permission denied on the socket says whose access is missing', () => {
  const built = join(repoRoot, 'dist', 'host', 'services', 'docker-engine.js');
  if (!existsSync(built)) throw new Error('run `npm run build` first: this test runs the built client as an unprivileged user');
  chmodSync(dir, 0o755);
  chmodSync(engine.socketPath, 0o000);
  const code = `
    const { DockerEngine } = require(${JSON.stringify(built)});
    new DockerEngine(${JSON.stringify(engine.socketPath)}).call('GET', '/containers/jellyfin/json')
      .then(() => console.log('reached'), (err) => console.log(err.message));
  `;
  // Root would be let through whatever the socket's mode: the client runs as nobody then.
  const asUser = process.getuid?.() === 0 ? { uid: 65534, gid: 65534 } : {};
  const run = spawnSync(process.execPath, ['-e', code], { encoding: 'utf8', ...asUser });
  expect(run.stdout.trim()).toBe(
    `permission denied on the Docker socket ${engine.socketPath} (the tools worker's user needs access to it, e.g. membership of its group)`,
  );
  expect(engine.requests).toEqual([]);
});

test('the config names containers and sockets carefully', () => {
  const bad = (service: Record<string, unknown>) => servicesConfigSchema.safeParse({ jf: { adapter: 'docker', ...service } }).error?.issues[0]?.message;
  expect(bad({ container: '../../images/json' })).toMatch(/container must be a Docker container name or id/);
  expect(bad({ container: 'jellyfin', socket: 'docker.sock' })).toBe('socket must be an absolute path');
  expect(bad({ container: 'jellyfin', apiVersion: 'latest' })).toBe('apiVersion is like "1.44"');
  expect(servicesConfigSchema.safeParse({ jf: { adapter: 'kubernetes' } }).error?.issues[0]?.message).toBe('expected adapter: docker, systemd or process');
});
