import { existsSync, mkdtempSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../helpers/ports';
import { startInboxServer, type InboxServer } from '../../servers/inbox/inbox-server';
import { inboxSite } from '../../servers/inbox/site';
import { parseConfig, type AirlockConfig } from '../../core/config/config';
import { Database } from '../../host/stores/database/postgres';
import { migrate } from '../../host/stores/database/migrations';
import { statePaths } from '../../host/config/paths';
import { readReviewerKeysFile } from '../../host/keys/reviewer-keys-file';
import { JobHarness } from '../helpers/job-harness';
import { startPrivatePostgres, type PrivatePostgres } from '../helpers/private-postgres';
import { call } from '../helpers/raw-http';
import { SoftPasskey } from '../helpers/soft-passkey';

/**
 * The approval page as several processes behind one address, sharing the
 * database: an invite made with `airlock reviewer add --passkey` on one
 * machine is served by any of them, a registration started on one is
 * finished on another, and an invite still works exactly once.
 */
let pg: PrivatePostgres;
let h: JobHarness;
let url: string;
let origin: string;
const servers: Array<{ readonly port: number; readonly server: InboxServer }> = [];
let config: AirlockConfig;

const post = (port: number, path: string, value: unknown) =>
  call(port, { method: 'POST', path, headers: { 'Content-Type': 'application/json', Origin: origin, 'Sec-Fetch-Site': 'same-origin' }, body: JSON.stringify(value) });

beforeAll(async () => {
  pg = await startPrivatePostgres();
  await pg.sql('CREATE DATABASE inbox');
  url = pg.url('inbox');
  const db = Database.open(url);
  await migrate(db);
  await db.close();
  h = await JobHarness.create();
  const publicPort = await freePort();
  origin = `http://localhost:${publicPort}`;
  // Each process has its own data folder (as on its own machine); the keys file is the one they share.
  const keys = join(h.dir, 'shared-keys', 'reviewers.yaml');
  for (let i = 0; i < 2; i++) {
    const port = i === 0 ? publicPort : await freePort();
    const own = parseConfig({
      TEMPORAL_ADDRESS: h.env.address,
      TEMPORAL_NAMESPACE: h.env.namespace,
      AIRLOCK_DATA_DIR: mkdtempSync(join(h.dir, `page-${i}-`)),
      AIRLOCK_DATABASE_URL: url,
      AIRLOCK_REVIEWER_KEYS: keys,
      AIRLOCK_APPROVAL_PAGE_URL: origin,
      AIRLOCK_INBOX_LISTEN: `127.0.0.1:${port}`,
    });
    config ??= own;
    servers.push({ port, server: await startInboxServer({ config: own, site: inboxSite(own), cli: 'airlock', log: () => undefined }) });
  }
}, 120_000);
afterAll(async () => {
  for (const { server } of servers) await server.close();
  await h?.close();
  await pg?.stop();
});

const passkeysOf = (reviewer: string) => {
  const file = statePaths(config).reviewerKeys;
  return existsSync(file) ? (readReviewerKeysFile(file)[reviewer]?.passkeys ?? []) : [];
};

async function invite(reviewer: string): Promise<string> {
  const added = await h.cli(['reviewer', 'add', reviewer, '--passkey', '--json'], { AIRLOCK_DATABASE_URL: url, AIRLOCK_APPROVAL_PAGE_URL: origin, AIRLOCK_DATA_DIR: mkdtempSync(join(h.dir, 'cli-')) });
  expect(added).toMatchObject({ code: 0, stderr: '' });
  return (JSON.parse(added.stdout) as { link: string }).link.split('#')[1] ?? '';
}

test('an invite made on another machine registers through either page process, started on one and finished on the other, once', async () => {
  const token = await invite('erin');
  // Only the token's hash is in the database.
  const stored = await pg.sql('SELECT * FROM airlock_invites', [], 'inbox');
  expect(stored).toHaveLength(1);
  expect(JSON.stringify(stored)).not.toContain(token);
  const [a, b] = servers;
  const started = await post(a!.port, '/api/register/options', { token });
  expect(started.status).toBe(200);
  const { challenge } = (JSON.parse(started.body) as { options: { challenge: string } }).options;
  const key = new SoftPasskey('localhost', origin);
  const done = await post(b!.port, '/api/register', { token, response: key.registration(challenge) });
  expect({ status: done.status, body: done.body }).toMatchObject({ status: 200 });
  expect(passkeysOf('erin').map((p) => p.id)).toEqual([key.id]);
  // Used up, on every process.
  for (const { port } of servers) expect((await post(port, '/api/register/options', { token })).status).toBe(404);
  expect(await pg.sql('SELECT count(*)::int AS n FROM airlock_invites', [], 'inbox')).toEqual([{ n: 0 }]);
});

test('registrations with one invite on both processes at once: exactly one passkey is added', async () => {
  const token = await invite('frank');
  const started = await post(servers[0]!.port, '/api/register/options', { token });
  const { challenge } = (JSON.parse(started.body) as { options: { challenge: string } }).options;
  const keys = Array.from({ length: 6 }, () => new SoftPasskey('localhost', origin));
  const answers = await Promise.all(keys.map((k, i) => post(servers[i % 2]!.port, '/api/register', { token, response: k.registration(challenge) })));
  expect(answers.map((a) => a.status).sort()).toEqual([200, 404, 404, 404, 404, 404]);
  expect(passkeysOf('frank')).toHaveLength(1);
});

test('a registration whose answer does not verify leaves the invite usable on every process', async () => {
  const token = await invite('grace');
  const started = await post(servers[1]!.port, '/api/register/options', { token });
  const { challenge } = (JSON.parse(started.body) as { options: { challenge: string } }).options;
  const key = new SoftPasskey('localhost', origin);
  const refused = await post(servers[0]!.port, '/api/register', { token, response: key.registration(challenge, { userVerified: false }) });
  expect(refused.status).toBe(400);
  expect((await post(servers[0]!.port, '/api/register/options', { token })).status).toBe(200);
  expect((await post(servers[1]!.port, '/api/register/options', { token })).status).toBe(200);
  expect(passkeysOf('grace')).toEqual([]);
});
