import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../core/config/config';
import { temporalTarget } from '../../host/temporal/target';

/** How the connection settings resolve, as the temporal CLI resolves them: variables over the profile file. */
let home: string;

beforeAll(() => {
  home = mkdtempSync(join(tmpdir(), 'airlock-profile-'));
  mkdirSync(join(home, '.config', 'temporalio'), { recursive: true });
  writeFileSync(
    join(home, '.config', 'temporalio', 'temporal.toml'),
    ['[profile.default]', 'address = "default.example:7233"', '', '[profile.prod]', 'address = "prod.example:7233"', 'namespace = "prod-ns"', 'api_key = "secret-key"', ''].join('\n'),
  );
});
afterAll(() => rmSync(home, { recursive: true, force: true }));

const target = (env: Record<string, string>) => temporalTarget(parseConfig(env));

test('without variables or a profile file: the address and namespace as configured, nothing secured', () => {
  expect(target({ HOME: join(home, 'nowhere'), TEMPORAL_ADDRESS: 'temporal.lan:7233' })).toEqual({ address: 'temporal.lan:7233', namespace: 'default', secured: [] });
  expect(target({ HOME: join(home, 'nowhere') })).toMatchObject({ address: '127.0.0.1:7233', namespace: 'default' });
});

test("the default file's default profile, a named profile with its API key (which turns TLS on), and variables over the profile", () => {
  expect(target({ HOME: home })).toMatchObject({ address: 'default.example:7233', namespace: 'default' });
  const prod = target({ HOME: home, TEMPORAL_PROFILE: 'prod' });
  expect(prod).toMatchObject({ address: 'prod.example:7233', namespace: 'prod-ns', apiKey: 'secret-key', tls: true });
  expect(prod.secured).toEqual([`profile prod of ${join(home, '.config', 'temporalio', 'temporal.toml')}`]);
  expect(target({ HOME: home, TEMPORAL_PROFILE: 'prod', TEMPORAL_ADDRESS: 'other:7233', TEMPORAL_NAMESPACE: 'mine' })).toMatchObject({ address: 'other:7233', namespace: 'mine', apiKey: 'secret-key' });
});

test('a profile that is not there, a file that is not there: a configuration error naming the variable', () => {
  expect(() => target({ HOME: home, TEMPORAL_PROFILE: 'staging' })).toThrow(/TEMPORAL_PROFILE: .*staging/);
  expect(() => target({ HOME: home, TEMPORAL_CONFIG_FILE: join(home, 'missing.toml') })).toThrow(/TEMPORAL_CONFIG_FILE: cannot read .*missing\.toml \(ENOENT\)/);
});

test('TEMPORAL_CONFIG_FILE set empty: no profile file, not even the default one', () => {
  expect(target({ HOME: home, TEMPORAL_CONFIG_FILE: '' })).toEqual({ address: '127.0.0.1:7233', namespace: 'default', secured: [] });
});
