import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { servedByResident } from '../../cli/resident/client';
import { residentIdentity, residentPlace, residentSetting } from '../../cli/resident/place';

let root: string;

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'airlock-place-'));
  mkdirSync(join(root, 'dist', 'cli', 'resident'), { recursive: true });
  for (const f of ['package.json', 'dist/.tsbuildinfo', 'dist/cli/main.js', 'dist/cli/resident/serve.js', 'dist/cli/resident/client.js']) writeFileSync(join(root, f), 'x');
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

const env = { PATH: '/usr/bin', HOME: '/home/r', LANG: 'C.UTF-8', TEMPORAL_ADDRESS: '127.0.0.1:7233', AIRLOCK_REVIEWER: 'alice' };

test('what a command reads when it runs leaves the identity alone; what a process reads when it starts changes it', () => {
  const id = residentIdentity(env, root);
  expect(id).toMatch(/^[0-9a-f]{32}$/);
  for (const same of [
    { TEMPORAL_ADDRESS: 'nas:7233' },
    { TEMPORAL_NAMESPACE: 'home' },
    { AIRLOCK_REVIEWER: 'bob' },
    { AIRLOCK_CLI_RESIDENT: 'always' },
    { PWD: '/tmp', OLDPWD: '/', SHLVL: '3', _: '/usr/bin/env' },
    // Set per call or per login by sudo, npx and ssh: each would otherwise start a process of its own.
    { SUDO_COMMAND: '/usr/bin/airlock show j', INIT_CWD: '/srv', SSH_CONNECTION: '10.0.0.2 5 10.0.0.1 22', SSH_TTY: '/dev/pts/3' },
    { HOME: '/home/s', PATH: '/bin' },
    // Read per call by gRPC, so a command brings them.
    { grpc_proxy: 'http://proxy:3128', https_proxy: 'http://proxy:3128', no_proxy: 'nas' },
  ]) {
    expect({ same, id: residentIdentity({ ...env, ...same }, root) }).toEqual({ same, id });
  }
  for (const other of [
    { NODE_OPTIONS: '--max-old-space-size=300' },
    { NODE_EXTRA_CA_CERTS: '/etc/ca.pem' },
    { GRPC_TRACE: 'all' },
    { LANG: 'de_DE.UTF-8' },
    { AIRLOCK_COMPILE_CACHE: 'off' },
    { AIRLOCK_CLI_RESIDENT_IDLE: '1m' },
    { LC_ALL: 'C' },
    { TZ: 'Asia/Tokyo' },
    { UV_THREADPOOL_SIZE: '8' },
    { SSL_CERT_FILE: '/etc/ssl/other.pem' },
    // A wrapper that acts on the process it starts in (torsocks, proxychains, libfaketime).
    { LD_PRELOAD: '/usr/lib/torsocks/libtorsocks.so' },
    { RES_OPTIONS: 'ndots:2' },
  ]) {
    expect({ other, differs: residentIdentity({ ...env, ...other }, root) !== id }).toEqual({ other, differs: true });
  }
  expect(residentIdentity(env, join(root, 'dist'))).not.toBe(id);
});

test('a rebuild is a new identity: any of the files that make the build changed on disk', () => {
  for (const f of ['package.json', 'dist/.tsbuildinfo', 'dist/cli/main.js', 'dist/cli/resident/serve.js', 'dist/cli/resident/client.js']) {
    const before = residentIdentity(env, root);
    const later = new Date(Date.now() + 60_000 * (f.length + 1));
    utimesSync(join(root, f), later, later);
    expect({ f, changed: residentIdentity(env, root) !== before }).toEqual({ f, changed: true });
  }
});

test('no place without a home, or where the socket name would not fit', () => {
  expect(residentPlace({ PATH: '/usr/bin' }, root)).toBeUndefined();
  expect(residentPlace({ HOME: 'relative/home' }, root)).toBeUndefined();
  const deep = join(root, 'd'.repeat(90));
  expect(residentPlace({ XDG_RUNTIME_DIR: deep }, root)).toBeUndefined();
  const place = residentPlace({ XDG_RUNTIME_DIR: join(root, 'run') }, root);
  expect(place).toMatchObject({ folder: join(root, 'run', 'airlock'), socket: expect.stringMatching(/\/cli-[0-9a-f]{32}\.sock$/) });
});

test('the commands a resident process runs, and the settings', () => {
  for (const argv of [['pending'], ['pending', '--json', '--limit', '5'], ['show', 'j'], ['approve', 'j', '--set', 'a=b'], ['deny', 'j', '--reason', 'no']]) {
    expect({ argv, served: servedByResident(argv) }).toEqual({ argv, served: true });
  }
  for (const argv of [[], ['run', '--goal', 'x'], ['pending', '--watch'], ['pending', '--watch=true'], ['show', '--help'], ['show', '-h'], ['approve', '--', 'j'], ['dev'], ['--help']]) {
    expect({ argv, served: servedByResident(argv) }).toEqual({ argv, served: false });
  }
  expect([undefined, '', 'auto', 'always', 'off', 'sometimes'].map((v) => residentSetting(v === undefined ? {} : { AIRLOCK_CLI_RESIDENT: v }))).toEqual([
    'auto',
    'auto',
    'auto',
    'always',
    'off',
    'off',
  ]);
});
