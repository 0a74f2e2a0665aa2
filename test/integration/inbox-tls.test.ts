import { createHash, X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { request, type RequestOptions } from 'node:https';
import { hostname } from 'node:os';
import type { TLSSocket } from 'node:tls';
import { join } from 'node:path';
import { chromium, type Browser, type BrowserContext, type CDPSession, type Page } from 'playwright-core';
import { startInboxServer, type InboxServer } from '../../servers/inbox/inbox-server';
import { CA_CERT_PATH, inboxSite, inboxTlsDir } from '../../servers/inbox/site';
import { freePort } from '../helpers/ports';
import { parseConfig, type AirlockConfig } from '../../core/config/config';
import { defaultRules } from '../../core/policy/default-rules';
import { statePaths } from '../../host/config/paths';
import { readReviewerKeysFile } from '../../host/keys/reviewer-keys-file';
import { ReviewerKeysFile } from '../../host/keys/reviewer-keys';
import { JobHarness } from '../helpers/job-harness';
import { spawnNode } from '../helpers/processes';

/** Debian's chromium (`.ci/run` installs it); AIRLOCK_TEST_CHROMIUM points elsewhere. */
const chromiumPath = process.env.AIRLOCK_TEST_CHROMIUM ?? '/usr/bin/chromium';
/** A name that is not localhost: the page is a secure context only because it is served over HTTPS. */
const PUBLIC_HOST = 'airlock.test';

let h: JobHarness;
let config: AirlockConfig;
let inbox: InboxServer;
let port: number;
let origin: string;
let caPem: string;
let keysFile: string;
let browser: Browser;
let context: BrowserContext;
let page: Page;
let cdp: CDPSession;

beforeAll(async () => {
  expect(existsSync(chromiumPath)).toBe(true);
  port = await freePort();
  origin = `https://${PUBLIC_HOST}:${port}`;
  const read: { file?: ReviewerKeysFile } = {};
  h = await JobHarness.create({ rules: defaultRules, reviewerKeys: { get: (r) => read.file?.get(r), passkeys: (r) => read.file?.passkeys(r) ?? [] } });
  config = parseConfig({
    TEMPORAL_ADDRESS: h.env.address,
    TEMPORAL_NAMESPACE: h.env.namespace,
    AIRLOCK_DATA_DIR: join(h.dir, 'data'),
    AIRLOCK_INBOX_LISTEN: `127.0.0.1:${port}`,
    AIRLOCK_INBOX_TLS: '1',
    AIRLOCK_APPROVAL_PAGE_URL: origin,
  });
  keysFile = statePaths(config).reviewerKeys;
  read.file = ReviewerKeysFile.open(keysFile, { mustExist: false });
  inbox = await startInboxServer({ config, site: inboxSite(config), cli: 'airlock', log: () => undefined });
  caPem = readFileSync(inbox.tls?.caFile ?? '', 'utf8');

  // The browser trusts exactly the served certificate's key, and checks everything else as usual
  // (no ignoreHTTPSErrors): WebAuthn refuses pages with certificate errors.
  const served = new X509Certificate(readFileSync(join(inboxTlsDir(config), 'server.crt')));
  const spki = createHash('sha256').update(served.publicKey.export({ type: 'spki', format: 'der' })).digest('base64');
  browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    args: ['--no-sandbox', `--host-resolver-rules=MAP ${PUBLIC_HOST} 127.0.0.1`, `--ignore-certificate-errors-spki-list=${spki}`],
  });
  context = await browser.newContext({ ignoreHTTPSErrors: false });
  page = await context.newPage();
  cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
});

afterAll(async () => {
  await browser?.close();
  await inbox?.close();
  await h?.close();
});

/** GET over TLS to the inbox at 127.0.0.1, asking for `PUBLIC_HOST` (SNI and Host), as a phone that resolves it would. */
function get(path: string, options: RequestOptions = {}): Promise<{ status: number; type: string; body: string; san: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, servername: PUBLIC_HOST, headers: { host: `${PUBLIC_HOST}:${port}` }, agent: false, ...options }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const socket = res.socket as TLSSocket;
        resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), body: Buffer.concat(chunks).toString('utf8'), san: socket.getPeerCertificate().subjectaltname ?? '' });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

describe('airlock inbox --tls', () => {
  test('the served certificate chains to the local CA, for the configured host and this machine', async () => {
    expect(inbox.url).toBe(origin);
    expect(inbox.tls?.caFingerprint).toBe(new X509Certificate(caPem).fingerprint256);
    const page = await get('/', { ca: caPem });
    expect(page.status).toBe(200);
    for (const name of [`DNS:${PUBLIC_HOST}`, 'DNS:localhost', 'IP Address:127.0.0.1', `DNS:${hostname().toLowerCase()}`]) expect(page.san).toContain(name);
    // Without the CA, the same request is refused by the client: the certificate is nobody else's.
    await expect(get('/', {})).rejects.toMatchObject({ code: expect.stringMatching(/UNABLE_TO_VERIFY_LEAF_SIGNATURE|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_GET_ISSUER_CERT_LOCALLY/) });
  });

  test('the page serves the CA certificate for a phone to install, and no key', async () => {
    const ca = await get(CA_CERT_PATH, { ca: caPem });
    expect(ca.status).toBe(200);
    expect(ca.type).toBe('application/x-x509-ca-cert');
    // The CA file's certificate, re-encoded from its parsed form: one PEM block, nothing else.
    expect(new X509Certificate(ca.body).fingerprint256).toBe(new X509Certificate(caPem).fingerprint256);
    expect(ca.body.match(/-----BEGIN /g)).toHaveLength(1);
    expect(ca.body).not.toContain('PRIVATE KEY');
  });

  test('a passkey registered through the https link decides a parked request', async () => {
    const added = await h.cli(['reviewer', 'add', 'alice', '--passkey'], { AIRLOCK_INBOX_LISTEN: `127.0.0.1:${port}`, AIRLOCK_INBOX_TLS: '1', AIRLOCK_APPROVAL_PAGE_URL: origin });
    expect(added.code).toBe(0);
    expect(added.stderr).toBe('');
    expect(added.stdout).toContain(`the device must trust airlock's CA first: open ${origin}${CA_CERT_PATH} on it`);
    const link = /(https:\/\/\S+\/register#[A-Za-z0-9_-]+)/.exec(added.stdout)?.[1] ?? '';
    expect(link).toContain(`${origin}/register#`);

    await page.goto(link);
    // A real TLS connection the browser accepts: a secure context on a name that is not localhost.
    await expect(page.evaluate('window.isSecureContext && location.protocol')).resolves.toBe('https:');
    await page.locator('#register:not([disabled])').waitFor();
    await page.click('#register');
    await page.locator('#result[data-state="accepted"]').waitFor({ timeout: 30_000 });
    const passkeys = readReviewerKeysFile(keysFile).alice?.passkeys ?? [];
    expect(passkeys).toEqual([expect.objectContaining({ rpId: PUBLIC_HOST, origin })]);

    writeFileSync(join(h.root, 'tls-victim.txt'), 'x');
    const { jobId } = await h.start({
      jobId: `inbox-tls-${Date.now()}`,
      goal: 'tidy up over https',
      script: {
        turns: [
          { content: 'The file tls-victim.txt looks unused.', tool_calls: [{ name: 'fs_delete', arguments: { path: 'tls-victim.txt' } }] },
          { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] },
        ],
      },
    });
    const requestId = (await h.waitForPending(jobId)).pending[0]?.requestId ?? '';
    await page.goto(`${origin}/jobs/${encodeURIComponent(jobId)}/requests/${encodeURIComponent(requestId)}`);
    // Older pages ask for the reviewer's name; newer ones take it from the passkey.
    const reviewer = page.locator('#reviewer');
    if ((await reviewer.count()) > 0 && (await reviewer.inputValue()) === '') await reviewer.fill('alice');
    await page.click('#approve');
    await page.locator('#result[data-state="accepted"]').waitFor({ timeout: 60_000 });

    await h.waitFor(jobId, (s) => s.status === 'completed', 'completion');
    expect(existsSync(join(h.root, 'tls-victim.txt'))).toBe(false);
    expect(h.audit(jobId, 'approval_decided')).toEqual([expect.objectContaining({ data: expect.objectContaining({ decision: 'approve', reviewer: 'alice', signedWith: 'passkey' }) })]);
  });

  test('the command prints the https URL, the CA, its fingerprint and the steps to trust it; a second start reuses the CA', async () => {
    const other = await freePort();
    const run = spawnNode('bin/airlock.js', ['inbox', '--tls', '--listen', `127.0.0.1:${other}`], h.processEnv({ AIRLOCK_APPROVAL_PAGE_URL: origin }));
    try {
      await run.waitFor(/Android: .*\n/, 30_000);
      const out = run.output();
      expect(out).toContain(`airlock inbox: serving ${origin} (listening on 127.0.0.1:${other};`);
      expect(out).toContain(`HTTPS with airlock's own CA: ${inbox.tls?.caFile}\n`);
      expect(out).toContain(`CA SHA-256 ${inbox.tls?.caFingerprint}`);
      expect(out).toContain(`open ${origin}${CA_CERT_PATH} on it`);
      expect(out).toContain('Settings › General › About › Certificate Trust Settings');
      expect(out).toContain('Settings › Security › Encryption & credentials › Install a certificate › CA certificate');
      // Same names, same CA: nothing made again.
      expect(out).not.toContain('(made now');
      expect(out).not.toContain('(issued now)');
    } finally {
      run.child.kill('SIGTERM');
    }
    expect(await run.exited()).toBe(0);
  });

  test('a data folder it cannot write, or a corrupt CA: one line, exit 1, no stack', async () => {
    const blocked = join(h.dir, 'blocked');
    mkdirSync(blocked, { recursive: true });
    writeFileSync(join(blocked, 'inbox'), 'a file where the folder should be');
    const corrupt = join(h.dir, 'corrupt');
    mkdirSync(join(corrupt, 'inbox', 'tls'), { recursive: true });
    writeFileSync(join(corrupt, 'inbox', 'tls', 'ca.crt'), 'not a certificate');
    writeFileSync(join(corrupt, 'inbox', 'tls', 'ca.key'), 'not a key');
    const cases: Array<[string, RegExp]> = [
      [blocked, /^airlock inbox: cannot create the folder \S+ for the inbox's TLS files \(ENOTDIR: not a directory\); make the data folder writable by this user, or point AIRLOCK_DATA_DIR at one that is\n$/],
      [corrupt, /^airlock inbox: \S+ca\.crt is not a readable certificate; delete the folder \S+ to make a new CA, and trust the new one on your phones\n$/],
    ];
    for (const [dataDir, expected] of cases) {
      const run = spawnNode('bin/airlock.js', ['inbox', '--tls', '--listen', `127.0.0.1:${await freePort()}`], h.processEnv({ AIRLOCK_DATA_DIR: dataDir }));
      // A start that wrongly succeeds would serve forever: it is stopped, and the check below fails.
      const stop = setTimeout(() => run.child.kill('SIGKILL'), 20_000);
      const code = await run.exited();
      clearTimeout(stop);
      expect({ code, output: run.output() }).toEqual({ code: 1, output: expect.stringMatching(expected) });
    }
  });
});
