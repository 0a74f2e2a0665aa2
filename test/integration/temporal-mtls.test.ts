import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TopologyPorts } from '../../ops/topology/layout';
import { startFullTemporal, type FullTemporal } from '../helpers/full-temporal';
import { spawnNode, type Spawned } from '../helpers/processes';

/**
 * A Temporal server that wants a client certificate (mTLS on its
 * frontend, certificates made here): airlock's workers and CLI connect with
 * the `temporal` CLI's variables; without a certificate, with one of
 * another CA, or with a file that is not there, they stop in one line that
 * names the variable to fix.
 */
let dir: string;
let server: FullTemporal | undefined;
let ports: TopologyPorts;
const spawned: Spawned[] = [];

function openssl(args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
}

/** A CA, and a certificate it signs for `cn` with `san`. */
function makeCa(name: string): void {
  openssl(['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${name}-key.pem`, '-out', `${name}.pem`, '-days', '2', '-subj', `/CN=${name}`]);
}
function makeCert(ca: string, name: string, cn: string, san: string): void {
  writeFileSync(join(dir, `${name}.ext`), `subjectAltName=${san}\nextendedKeyUsage=serverAuth,clientAuth\n`);
  openssl(['req', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes', '-keyout', `${name}-key.pem`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`]);
  openssl(['x509', '-req', '-in', `${name}.csr`, '-CA', `${ca}.pem`, '-CAkey', `${ca}-key.pem`, '-CAcreateserial', '-out', `${name}.pem`, '-days', '2', '-extfile', `${name}.ext`]);
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-mtls-'));
  makeCa('ca');
  makeCert('ca', 'server', 'localhost', 'DNS:localhost,IP:127.0.0.1');
  makeCert('ca', 'client', 'airlock-worker', 'DNS:airlock-worker');
  makeCa('other-ca');
  makeCert('other-ca', 'stranger', 'airlock-worker', 'DNS:airlock-worker');

  // Up once its frontend answers a client with the right certificate; then the namespace airlock uses.
  const clientTls = {
    serverRootCACertificate: readFileSync(join(dir, 'ca.pem')),
    serverNameOverride: 'localhost',
    clientCertPair: { crt: readFileSync(join(dir, 'client.pem')), key: readFileSync(join(dir, 'client-key.pem')) },
  };
  server = await startFullTemporal(dir, {
    tls: {
      caFile: join(dir, 'ca.pem'),
      certFile: join(dir, 'server.pem'),
      keyFile: join(dir, 'server-key.pem'),
      clientCertFile: join(dir, 'client.pem'),
      clientKeyFile: join(dir, 'client-key.pem'),
    },
    clientTls,
  });
  ports = server.ports;
  const setup = await cli(['setup'], trusted());
  expect(setup.output).toMatch(/namespace default: registered/);
}, 15 * 60_000);

afterAll(async () => {
  for (const p of spawned) p.child.kill('SIGKILL');
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

const base = () => ({ PATH: process.env.PATH, HOME: dir, TEMPORAL_ADDRESS: `127.0.0.1:${ports.temporal}`, AIRLOCK_DATA_DIR: join(dir, 'data') });
/** The client certificate of the server's CA, as the temporal CLI takes it. */
const trusted = () => ({
  ...base(),
  TEMPORAL_TLS_CLIENT_CERT_PATH: join(dir, 'client.pem'),
  TEMPORAL_TLS_CLIENT_KEY_PATH: join(dir, 'client-key.pem'),
  TEMPORAL_TLS_SERVER_CA_CERT_PATH: join(dir, 'ca.pem'),
  // The certificate names the server `localhost`; the address is an IP.
  TEMPORAL_TLS_SERVER_NAME: 'localhost',
});

async function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  const p = spawnNode('bin/airlock.js', args, env);
  return { code: await p.exited(), output: p.output() };
}

test('with the client certificate, the CLI and a worker connect and work', async () => {
  const pending = await cli(['pending', '--json'], trusted());
  // The output too, so a failure says why.
  expect(pending).toMatchObject({ code: 0 });
  expect(JSON.parse(pending.output)).toEqual(expect.anything());

  const worker = spawnNode('dist/workers/airlock-judge.js', [], { ...trusted(), OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' });
  spawned.push(worker);
  await worker.waitFor(new RegExp(`workers polling airlock-judge on 127\\.0\\.0\\.1:${ports.temporal}`));
  worker.child.kill('SIGTERM');
  expect(await worker.exited()).toBe(0);
});

test('without a certificate: one line, saying which variables to set', async () => {
  const out = await cli(['pending'], base());
  expect(out.code).not.toBe(0);
  const lines = out.output.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/TEMPORAL_TLS_CLIENT_CERT_PATH/);
});

test("a certificate of another CA: one line naming the variables it came from; the worker stops the same way", async () => {
  const stranger = { ...trusted(), TEMPORAL_TLS_CLIENT_CERT_PATH: join(dir, 'stranger.pem'), TEMPORAL_TLS_CLIENT_KEY_PATH: join(dir, 'stranger-key.pem') };
  const out = await cli(['pending'], stranger);
  expect(out.code).not.toBe(0);
  const lines = out.output.trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toContain(`TEMPORAL_TLS_CLIENT_CERT_PATH=${join(dir, 'stranger.pem')}`);

  const worker = spawnNode('dist/workers/airlock-judge.js', [], { ...stranger, OPENAI_BASE_URL: 'http://127.0.0.1:9/v1' });
  spawned.push(worker);
  expect(await worker.exited()).not.toBe(0);
  const workerLines = worker.output().trim().split('\n');
  expect(workerLines[workerLines.length - 1]).toContain(`TEMPORAL_TLS_CLIENT_CERT_PATH=${join(dir, 'stranger.pem')}`);
});

test('a certificate file that is not there, or a certificate without its key: one line naming the variable', async () => {
  const missing = await cli(['pending'], { ...trusted(), TEMPORAL_TLS_CLIENT_CERT_PATH: join(dir, 'nope.pem') });
  expect(missing.code).not.toBe(0);
  expect(missing.output.trim()).toMatch(new RegExp(`^airlock pending: invalid configuration: TEMPORAL_TLS_CLIENT_CERT_PATH: cannot read ${join(dir, 'nope.pem')} \\(ENOENT\\)`));
  const { TEMPORAL_TLS_CLIENT_KEY_PATH: _key, ...withoutKey } = trusted();
  const half = await cli(['pending'], withoutKey);
  expect(half.code).not.toBe(0);
  expect(half.output.trim()).toMatch(/TEMPORAL_TLS_CLIENT_KEY_PATH: a client certificate needs both the certificate and its key/);
});
