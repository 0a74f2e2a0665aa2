import { undoJobId } from '../../client/airlock-client/undoing';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { join } from 'node:path';
import { freePort } from '../helpers/ports';
import { startInboxServer, type InboxServer } from '../../servers/inbox/inbox-server';
import { inboxSite } from '../../servers/inbox/site';
import { parseConfig, type AirlockConfig } from '../../core/config/config';
import { PasskeyInvites } from '../../host/stores/passkey-invites/files';
import { statePaths } from '../../host/config/paths';
import { readReviewerKeysFile, updateReviewerKeysFile } from '../../host/keys/reviewer-keys-file';
import { ReviewerKeysFile } from '../../host/keys/reviewer-keys';
import { JobHarness } from '../helpers/job-harness';
import { call, type Answer } from '../helpers/raw-http';
import { SoftPasskey } from '../helpers/soft-passkey';

/*
 * The approval inbox as an attacker meets it: a raw HTTP client that sends
 * any Host, Origin, encoding or body, and a software authenticator that
 * says whatever it likes. Each test is one attack and what must hold.
 */

/** Bytes written as they are (no client library to tidy them), and everything the server answers until it closes. */
function raw(port: number, chunks: readonly (string | Buffer)[]): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const got: Buffer[] = [];
    socket.on('data', (c: Buffer) => got.push(c));
    socket.on('error', (err: NodeJS.ErrnoException) => (err.code === 'ECONNRESET' || err.code === 'EPIPE' ? resolve(Buffer.concat(got).toString('utf8')) : reject(err)));
    socket.on('close', () => resolve(Buffer.concat(got).toString('utf8')));
    socket.on('connect', () => {
      for (const chunk of chunks) socket.write(chunk);
    });
  });
}

let h: JobHarness;
let config: AirlockConfig;
let inbox: InboxServer;
let port: number;
let origin: string;
const logged: string[] = [];

const post = (path: string, value: unknown, headers: Record<string, string> = {}) =>
  call(port, { method: 'POST', path, headers: { 'Content-Type': 'application/json', Origin: origin, 'Sec-Fetch-Site': 'same-origin', ...headers }, body: JSON.stringify(value) });
const errorOf = (answer: Answer) => (JSON.parse(answer.body) as { error: string }).error;
const keysFile = () => statePaths(config).reviewerKeys;
const invites = () => new PasskeyInvites(statePaths(config).inboxInvites);

beforeAll(async () => {
  port = await freePort();
  origin = `http://localhost:${port}`;
  const read: { file?: ReviewerKeysFile } = {};
  h = await JobHarness.create({ reviewerKeys: { get: (r) => read.file?.get(r), passkeys: (r) => read.file?.passkeys(r) ?? [] } });
  config = parseConfig({ TEMPORAL_ADDRESS: h.env.address, TEMPORAL_NAMESPACE: h.env.namespace, AIRLOCK_DATA_DIR: join(h.dir, 'data'), AIRLOCK_INBOX_LISTEN: `127.0.0.1:${port}` });
  read.file = ReviewerKeysFile.open(keysFile(), { mustExist: false });
  inbox = await startInboxServer({ config, site: inboxSite(config), cli: 'airlock', log: (line) => logged.push(line) });
});
afterAll(async () => {
  await inbox?.close();
  await h?.close();
});

describe('request paths', () => {
  test('a malformed percent-encoding in a job or request id is a clear 400, not a failure of the inbox', async () => {
    logged.length = 0;
    for (const path of ['/jobs/%E0%A4%A/requests/x', '/jobs/j/requests/%', '/api/jobs/%zz/requests/x']) {
      const answer = await call(port, { path });
      expect(answer.status).toBe(400);
      expect(answer.body).toContain('not a valid percent-encoding');
    }
    expect(logged).toEqual([]);
  });

  test('traversal and odd encodings in asset and request paths reach no file', async () => {
    const paths = [
      '/assets/../package.json',
      '/assets/%2e%2e/%2e%2e/package.json',
      '/assets/..%2f..%2fpackage.json',
      '/assets/inbox.js%00',
      '/assets/inbox.js/',
      '/assets/INBOX.JS',
      '/assets/..%5c..%5cpackage.json',
      '//assets/inbox.js',
      '/jobs/..%2F..%2F..%2Fetc%2Fpasswd/requests/x',
      '/api/jobs/..%2F..%2Fpackage.json/requests/x',
    ];
    for (const path of paths) {
      const answer = await call(port, { path });
      expect([404]).toContain(answer.status);
      expect(answer.body).not.toContain('"devDependencies"');
      expect(answer.body).not.toContain('root:x:0');
    }
    // The script is served at its one name only.
    expect((await call(port, { path: '/assets/inbox.js' })).body).toContain("'use strict'");
  });

  test('a job id longer than any job has is a clear error, not a failure of the inbox', async () => {
    logged.length = 0;
    const answer = await call(port, { path: `/jobs/${'a'.repeat(4000)}/requests/x` });
    expect(answer.status).toBeGreaterThanOrEqual(400);
    expect(answer.status).toBeLessThan(500);
    const api = await call(port, { path: `/api/jobs/${'a'.repeat(4000)}/requests/x` });
    expect(api.status).toBeLessThan(500);
    expect(logged).toEqual([]);
  });

  test('nothing redirects: no open redirect through odd paths or query strings', async () => {
    for (const path of ['//attacker.example/', '/\\attacker.example', '/?next=http://attacker.example', '/register?to=//attacker.example', '/jobs/x/requests/y?redirect=https://attacker.example']) {
      const answer = await call(port, { path });
      expect(answer.headers.location).toBeUndefined();
      expect(answer.status < 300 || answer.status >= 400).toBe(true);
      expect(answer.body).not.toContain('attacker.example');
    }
  });
});

describe('Host and Origin', () => {
  test('Host variants that are not exactly the public host or the listen address get nothing (DNS rebinding)', async () => {
    expect((await call(port, { headers: { Host: `LOCALHOST:${port}` } })).status).toBe(200);
    const refused = [
      `localhost.:${port}`,
      'localhost',
      `localhost:${port}.`,
      `127.0.0.1.:${port}`,
      `[::1]:${port}`,
      `[::ffff:127.0.0.1]:${port}`,
      `localhost:0${port}`,
      `localhost:${port}@attacker.example`,
      `attacker.example:${port}`,
      `0.0.0.0:${port}`,
    ];
    for (const host of refused) {
      const answer = await call(port, { headers: { Host: host } });
      expect([host, answer.status]).toEqual([host, 421]);
      expect(answer.body).not.toContain('Waiting for approval');
    }
    // No Host at all (HTTP/1.0), or an empty one: a client library would fill it in, so bytes as they are.
    for (const request of ['GET / HTTP/1.0\r\n\r\n', 'GET / HTTP/1.1\r\nHost:\r\nConnection: close\r\n\r\n']) {
      const answer = await raw(port, [request]);
      expect(answer).toMatch(/^HTTP\/1\.1 (421|400) /);
      expect(answer).not.toContain('Waiting for approval');
    }
  });

  test('a Host that carries markup is shown escaped on the refusal page', async () => {
    const answer = await call(port, { headers: { Host: '<script>alert(1)</script>' } });
    expect(answer.status).toBe(421);
    expect(answer.body).not.toContain('<script>alert');
  });

  test('Origin null, look-alike origins, other Sec-Fetch-Site values and other content types are refused', async () => {
    const body = { jobId: 'x', requestId: 'y', decision: 'approve', reviewer: 'alice' };
    for (const o of ['null', `${origin}/`, `HTTP://LOCALHOST:${port}`, `${origin}.attacker.example`, `http://localhost:${port + 1}`, `https://localhost:${port}`, `${origin}, ${origin}`]) {
      const answer = await post('/api/decision/options', body, { Origin: o });
      expect([o, answer.status]).toEqual([o, 403]);
    }
    for (const fetchSite of ['same-site', 'cross-site', 'none']) {
      expect((await post('/api/decision/options', body, { 'Sec-Fetch-Site': fetchSite })).status).toBe(403);
    }
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', 'application/json-patch+json', 'text/plain; application/json', 'application/json, text/plain', '']) {
      expect([type, (await post('/api/decision/options', body, { 'Content-Type': type })).status]).toEqual([type, 415]);
    }
    // Charset tricks change nothing: the body is read as UTF-8 JSON or refused as not JSON.
    const utf16 = await call(port, {
      method: 'POST',
      path: '/api/decision/options',
      headers: { 'Content-Type': 'application/json; charset=utf-16le', Origin: origin },
      body: Buffer.from(JSON.stringify(body), 'utf16le'),
    });
    expect(utf16.status).toBe(400);
    expect(errorOf(utf16)).toBe('the body is not valid JSON');
  });
});

describe('bodies', () => {
  const head = (path: string, extra: string) =>
    `POST ${path} HTTP/1.1\r\nHost: localhost:${port}\r\nOrigin: ${origin}\r\nContent-Type: application/json\r\n${extra}\r\n`;

  test('a chunked body over the limit is refused with 413 and a clear line, and the server goes on', async () => {
    const chunk = `${(16 * 1024).toString(16)}\r\n${'x'.repeat(16 * 1024)}\r\n`;
    const answer = await raw(port, [head('/api/decision/options', 'Transfer-Encoding: chunked\r\n'), chunk, chunk, chunk, chunk, chunk, '0\r\n\r\n']);
    expect(answer).toMatch(/^HTTP\/1\.1 413 /);
    expect(answer).toContain('the body is larger than 65536 bytes');
    expect((await call(port, { path: '/' })).status).toBe(200);
  });

  test('connections past the cap are closed at once; the page answers again once one is let go', async () => {
    const ownPort = await freePort();
    const own = parseConfig({ TEMPORAL_ADDRESS: h.env.address, TEMPORAL_NAMESPACE: h.env.namespace, AIRLOCK_DATA_DIR: join(h.dir, 'data'), AIRLOCK_INBOX_LISTEN: `127.0.0.1:${ownPort}` });
    const server = await startInboxServer({ config: own, site: inboxSite(own), cli: 'airlock', log: () => undefined, maxConnections: 4 });
    const held: Socket[] = [];
    try {
      for (let i = 0; i < 4; i++) {
        const s = connect(ownPort, '127.0.0.1');
        await new Promise<void>((resolve) => s.once('connect', () => resolve()));
        held.push(s);
      }
      // A fifth: the server closes it without an answer.
      const extra = connect(ownPort, '127.0.0.1');
      const answer = await new Promise<string>((resolve) => {
        let text = '';
        extra.on('data', (d: Buffer) => (text += d.toString()));
        extra.on('close', () => resolve(text));
        extra.on('error', () => undefined);
        extra.on('connect', () => extra.write(`GET / HTTP/1.1\r\nHost: localhost:${ownPort}\r\nConnection: close\r\n\r\n`));
      });
      expect(answer).toBe('');
      held.pop()?.destroy();
      await new Promise((r) => setTimeout(r, 100));
      expect((await call(ownPort, { path: '/', headers: { Host: `localhost:${ownPort}` } })).status).toBe(200);
    } finally {
      for (const s of held) s.destroy();
      await server.close();
    }
  });

  test('a Content-Length that understates the body does not smuggle a second request', async () => {
    // An inbox of its own that forwards one decision per job: a smuggled decision it handled would use that one up.
    const ownPort = await freePort();
    const own = parseConfig({ TEMPORAL_ADDRESS: h.env.address, TEMPORAL_NAMESPACE: h.env.namespace, AIRLOCK_DATA_DIR: join(h.dir, 'data'), AIRLOCK_INBOX_LISTEN: `127.0.0.1:${ownPort}` });
    const server = await startInboxServer({ config: own, site: inboxSite(own), cli: 'airlock', log: () => undefined, decisionLimits: { perJob: 1, overall: 100, windowMs: 60_000 } });
    try {
      const ownHost = `localhost:${ownPort}`;
      const ownOrigin = `http://${ownHost}`;
      const junk = new SoftPasskey('localhost', ownOrigin).assert('AAAA');
      const decision = JSON.stringify({
        jobId: 'smuggled-job',
        payload: { requestId: 'r', fingerprint: 'a'.repeat(64), nonce: 'b'.repeat(32), decision: 'approve', reviewer: 'mallory' },
        response: { id: junk.credentialId, rawId: junk.credentialId, type: 'public-key', response: { authenticatorData: junk.authenticatorData, clientDataJSON: junk.clientDataJSON, signature: junk.signature } },
      });
      const json = { 'Content-Type': 'application/json', Origin: ownOrigin };
      // Behind the 2 declared bytes, two requests with the Host and Origin this server accepts: only the framing can stop them.
      const smuggled =
        `GET /api/pending HTTP/1.1\r\nHost: ${ownHost}\r\n\r\n` +
        `POST /api/decision HTTP/1.1\r\nHost: ${ownHost}\r\nOrigin: ${ownOrigin}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(decision)}\r\n\r\n${decision}`;
      const first = `POST /api/decision/options HTTP/1.1\r\nHost: ${ownHost}\r\nOrigin: ${ownOrigin}\r\nContent-Type: application/json\r\nContent-Length: 2\r\nConnection: close\r\n\r\n`;
      const answer = await raw(ownPort, [first, `{}${smuggled}`]);
      // The client asked to close after its first request: exactly one answer comes back (a status line anywhere, even
      // glued to a body, counts), and it is not the pending list.
      expect(answer.match(/HTTP\/1\.[01] \d{3} /g)).toEqual(['HTTP/1.1 400 ']);
      expect(answer).not.toContain('"cards"');
      // Nor was the smuggled decision handled unanswered: the job's one decision is still there to take, and then gone.
      const send = () => call(ownPort, { method: 'POST', path: '/api/decision', headers: { Host: ownHost, ...json }, body: decision });
      const taken = await send();
      expect([taken.status, errorOf(taken)]).toEqual([404, expect.stringContaining('job smuggled-job is not running')]);
      expect((await send()).status).toBe(429);
    } finally {
      await server.close();
    }
  });

  test('slow bodies and half-sent headers do not keep the page from others', async () => {
    const slow: Socket[] = [];
    try {
      for (let i = 0; i < 40; i++) {
        const s = connect(port, '127.0.0.1');
        s.on('error', () => undefined);
        s.write(i % 2 === 0 ? `GET / HTTP/1.1\r\nHost: localhost:${port}\r\n` : `${head('/api/decision/options', 'Content-Length: 1000\r\n')}{"jobId":`);
        slow.push(s);
      }
      expect((await call(port, { path: '/' })).status).toBe(200);
      expect((await post('/api/decision/options', { jobId: 'x' })).status).toBe(400);
    } finally {
      for (const s of slow) s.destroy();
    }
  });

  test('a flood of requests is answered, each with its own status; nothing fails', async () => {
    logged.length = 0;
    const asks: Array<Promise<[string, number]>> = [];
    for (let i = 0; i < 150; i++) {
      const kind = i % 5;
      if (kind === 0) asks.push(call(port, { path: '/' }).then((a) => ['list', a.status]));
      else if (kind === 1) asks.push(call(port, { path: '/api/pending' }).then((a) => ['api', a.status]));
      else if (kind === 2) asks.push(post('/api/decision', { junk: i }).then((a) => ['bad', a.status]));
      else if (kind === 3) asks.push(call(port, { path: `/jobs/nope-${i}/requests/r` }).then((a) => ['gone', a.status]));
      else asks.push(post('/api/register/options', { token: 'A'.repeat(43) }).then((a) => ['invite', a.status]));
    }
    const got = await Promise.all(asks);
    const expected: Record<string, number> = { list: 200, api: 200, bad: 400, gone: 404, invite: 404 };
    for (const [kind, status] of got) expect([kind, status]).toEqual([kind, expected[kind]]);
    expect(logged).toEqual([]);
  });
});

describe('what the pages show', () => {
  const MARK = '<script>alert(1)</script>';
  const ATTR = '"><img src=x onerror=alert(2)>';
  const SECRET = 'AKIAIOSFODNN7EXAMPLE';
  let jobId: string;
  let requestId: string;
  let nonce: string;

  beforeAll(async () => {
    const name = `old${ATTR.replace(/[/]/g, '')}.tar`;
    writeFileSync(join(h.root, name), 'x'.repeat(10));
    h.setRules({ version: 1, rules: [{ id: 'signed-deletes', version: 1, name: 'signed deletes', scope: { categories: ['delete'] }, action: 'request_approval', approval: { signatureRequired: true } }] });
    ({ jobId } = await h.start({
      jobId: `attack-${Date.now()}-${'<b>x</b>'}`,
      goal: `tidy ${MARK} with key ${SECRET}`,
      script: {
        turns: [
          { content: `I will delete it ${MARK} ${ATTR} secret ${SECRET}`, tool_calls: [{ name: 'fs_delete', arguments: { path: name } }] },
          { tool_calls: [{ name: 'complete', arguments: { summary: 'ok' } }] },
        ],
      },
    }));
    const state = await h.waitForPending(jobId);
    requestId = state.pending[0]?.requestId ?? '';
    nonce = state.pending[0]?.nonce ?? '';
    expect(nonce).toMatch(/^[0-9a-f]{32}$/);
  });

  test('job ids, goals, file names and model text are escaped on every page; secrets are masked; the nonce is never shown', async () => {
    const card = `/jobs/${encodeURIComponent(jobId)}/requests/${encodeURIComponent(requestId)}`;
    let listed = '';
    for (let i = 0; i < 75 && !listed.includes(requestId); i++) {
      listed = (await call(port, { path: '/partials/list' })).body;
      if (!listed.includes(requestId)) await new Promise((r) => setTimeout(r, 200));
    }
    const pages = await Promise.all(['/', '/partials/list', '/api/pending', card, `/api${card}`].map((path) => call(port, { path })));
    expect(pages.map((p) => p.status)).toEqual([200, 200, 200, 200, 200]);
    for (const answer of pages) {
      // JSON carries the text as it is, and is never read as HTML or script.
      if (answer.headers['content-type'] === 'application/json; charset=utf-8') {
        expect(answer.headers['x-content-type-options']).toBe('nosniff');
        expect(answer.body).not.toContain(SECRET);
        expect(answer.body).not.toContain(nonce);
        continue;
      }
      expect(answer.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(answer.body).not.toContain('<script>alert');
      expect(answer.body).not.toContain('<img src=x');
      expect(answer.body).not.toContain('<b>x</b>');
      expect(answer.body).not.toContain(SECRET);
      expect(answer.body).not.toContain(nonce);
    }
    expect(pages[3]?.body).toContain('&#60;script&#62;alert(1)');
  });

  test('error messages that echo input are escaped', async () => {
    for (const path of [`/nowhere${encodeURIComponent(MARK)}`, `/nowhere${MARK.replace(/ /g, '')}`, `/jobs/${encodeURIComponent(MARK)}/requests/${encodeURIComponent(ATTR)}`]) {
      const answer = await call(port, { path });
      expect(answer.status).toBe(404);
      expect(answer.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(answer.body).not.toContain('<script>alert');
      expect(answer.body).not.toContain('<img src=x');
    }
    // An API error is JSON, never sniffed as HTML.
    const api = await post('/api/decision/options', { jobId: MARK, requestId: ATTR, decision: 'approve', reviewer: MARK });
    expect(api.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(api.headers['x-content-type-options']).toBe('nosniff');
  });

  test('reviewer names that are object keys are a clear refusal, not a failure', async () => {
    logged.length = 0;
    updateReviewerKeysFile(keysFile(), (e) => ({ ...e, zed: { passkeys: [new SoftPasskey('localhost', origin).registered()] } }));
    for (const reviewer of ['__proto__', 'constructor', 'toString', 'hasOwnProperty']) {
      const answer = await post('/api/decision/options', { jobId, requestId, decision: 'approve', reviewer });
      expect([reviewer, answer.status]).toEqual([reviewer, 400]);
      expect(errorOf(answer)).toContain(`reviewer ${reviewer} has no passkey for ${origin}`);
    }
    expect(logged).toEqual([]);
  });

  test("alice's passkey cannot decide as bob, nor with bob's user handle; nothing runs", async () => {
    const alice = new SoftPasskey('localhost', origin);
    const bob = new SoftPasskey('localhost', origin);
    updateReviewerKeysFile(keysFile(), (e) => ({ ...e, alice: { passkeys: [alice.registered()] }, bob: { passkeys: [bob.registered()] } }));
    const prepared = await post('/api/decision/options', { jobId, requestId, decision: 'approve', reviewer: 'bob' });
    expect(prepared.status).toBe(200);
    const { payload, options } = JSON.parse(prepared.body) as { payload: Record<string, unknown>; options: { challenge: string } };
    // bob's user handle, as his authenticator would return it: it is not signed, and proves nothing.
    const bobHandle = createHash('sha256').update('airlock-reviewer:bob').digest().toString('base64url');
    const signed = alice.assert(options.challenge, { userHandle: bobHandle });
    const response = {
      id: signed.credentialId,
      rawId: signed.credentialId,
      type: 'public-key',
      response: { authenticatorData: signed.authenticatorData, clientDataJSON: signed.clientDataJSON, signature: signed.signature, userHandle: bobHandle },
    };
    const sent = await post('/api/decision', { jobId, payload, response });
    expect(sent.status).toBe(200);
    expect(JSON.parse(sent.body)).toMatchObject({ accepted: false, code: 'signature_invalid' });
    expect((await h.state(jobId)).pending.map((r) => r.requestId)).toEqual([requestId]);
    expect(h.audit(jobId, 'tool_executed')).toHaveLength(0);
  });
});

describe('undo', () => {
  /** alice's answer to an identification challenge the page issued (or to the one given). */
  async function identified(passkey: SoftPasskey, challenge?: string) {
    const issued = challenge ?? (JSON.parse((await post('/api/identify/options', {})).body) as { options: { challenge: string } }).options.challenge;
    const signed = passkey.assert(issued);
    return { id: signed.credentialId, rawId: signed.credentialId, type: 'public-key', response: { authenticatorData: signed.authenticatorData, clientDataJSON: signed.clientDataJSON, signature: signed.signature } };
  }
  const undoJobExists = (jobId: string, callId: string) =>
    h.env.client.workflow
      .getHandle(undoJobId(jobId, callId))
      .describe()
      .then(() => true)
      .catch(() => false);

  test('no undo starts without a passkey answer to a challenge this page issued, used once, nor for a call the job never ran', async () => {
    const alice = new SoftPasskey('localhost', origin);
    updateReviewerKeysFile(keysFile(), (e) => ({ ...e, alice: { passkeys: [alice.registered()] } }));
    // A challenge the page never issued.
    const forged = await post('/api/undo', { jobId: 'job-x', callId: 'call_0_0', response: await identified(alice, 'bm90LWlzc3VlZA') });
    expect(forged.status).toBe(409);
    expect(errorOf(forged)).toContain('was not started here');
    // A genuine answer, for a job that ran no such delete: refused, and the answer is used up.
    const response = await identified(alice);
    const none = await post('/api/undo', { jobId: 'job-x', callId: 'call_0_0', response });
    expect(none.status).toBe(404);
    expect(errorOf(none)).toBe('job job-x ran no change call_0_0');
    const replayed = await post('/api/undo', { jobId: 'job-x', callId: 'call_0_0', response });
    expect(replayed.status).toBe(409);
    // Malformed: a clear 400 naming the field.
    const bad = await post('/api/undo', { jobId: 'job-x', response });
    expect(bad.status).toBe(400);
    expect(errorOf(bad)).toContain('callId');
    expect(await undoJobExists('job-x', 'call_0_0')).toBe(false);
  });
});

describe('registration', () => {
  /** Options for an invite, then the soft authenticator's answer to them. */
  async function begin(token: string): Promise<string> {
    const answer = await post('/api/register/options', { token });
    expect(answer.status).toBe(200);
    return (JSON.parse(answer.body) as { options: { challenge: string } }).options.challenge;
  }
  const passkeysOf = (reviewer: string) => (existsSync(keysFile()) ? (readReviewerKeysFile(keysFile())[reviewer]?.passkeys ?? []) : []);

  test('a genuine registration works, and the token is never logged nor echoed', async () => {
    logged.length = 0;
    const { token } = await invites().create('erin');
    const key = new SoftPasskey('localhost', origin);
    const challenge = await begin(token);
    const bodies: string[] = [];
    const noUv = await post('/api/register', { token, response: key.registration(challenge, { userVerified: false }) });
    bodies.push(noUv.body);
    expect(noUv.status).toBe(400);
    const otherOrigin = await post('/api/register', { token, response: key.registration(challenge, { origin: 'https://attacker.example' }) });
    bodies.push(otherOrigin.body);
    expect(otherOrigin.status).toBe(400);
    const done = await post('/api/register', { token, response: key.registration(challenge) });
    bodies.push(done.body);
    expect(done.status).toBe(200);
    expect(passkeysOf('erin').map((p) => p.id)).toEqual([key.id]);
    const again = await post('/api/register', { token, response: key.registration(challenge) });
    bodies.push(again.body, (await post('/api/register/options', { token })).body);
    expect(again.status).toBe(404);
    for (const text of [...bodies, ...logged]) expect(text).not.toContain(token);
  });

  test('two registrations with one invite at once: exactly one passkey is added', async () => {
    const { token } = await invites().create('frank');
    const challenge = await begin(token);
    const keys = Array.from({ length: 6 }, () => new SoftPasskey('localhost', origin));
    const answers = await Promise.all(keys.map((k) => post('/api/register', { token, response: k.registration(challenge) })));
    expect(answers.map((a) => a.status).sort()).toEqual([200, 404, 404, 404, 404, 404]);
    expect(passkeysOf('frank')).toHaveLength(1);
    expect(readdirSync(statePaths(config).inboxInvites).filter((f) => f.includes('.taken-'))).toEqual([]);
  });

  test("a credential id already registered to another reviewer is refused; alice's passkey stays hers", async () => {
    const alice = new SoftPasskey('localhost', origin);
    updateReviewerKeysFile(keysFile(), (e) => ({ ...e, alice: { passkeys: [alice.registered()] } }));
    const { token } = await invites().create('mallory');
    const challenge = await begin(token);
    // Mallory's own key pair, under the id the page shows as alice's (allowCredentials).
    const claim = new SoftPasskey('localhost', origin, alice.id);
    const answer = await post('/api/register', { token, response: claim.registration(challenge) });
    expect(answer.status).toBe(409);
    expect(errorOf(answer)).toContain('already registered');
    expect(passkeysOf('mallory')).toEqual([]);
  });

  test("an invite holder cannot replace the reviewer's registered passkey by reusing its id", async () => {
    const grace = new SoftPasskey('localhost', origin);
    updateReviewerKeysFile(keysFile(), (e) => ({ ...e, grace: { passkeys: [grace.registered()] } }));
    const { token } = await invites().create('grace');
    const challenge = await begin(token);
    const answer = await post('/api/register', { token, response: new SoftPasskey('localhost', origin, grace.id).registration(challenge) });
    expect(answer.status).toBe(409);
    expect(passkeysOf('grace').map((p) => p.publicKey)).toEqual([grace.registered().publicKey]);
  });

  test('a tampered invite file naming a reviewer no key file could have is refused', async () => {
    const dir = statePaths(config).inboxInvites;
    mkdirSync(dir, { recursive: true });
    for (const reviewer of ['__proto__', '../../etc/x', 'bad name', 'a\nb']) {
      const { token } = await invites().create('ok-name');
      const [file] = readdirSync(dir)
        .map((f) => join(dir, f))
        .filter((f) => readFileSync(f, 'utf8').includes('"ok-name"'));
      writeFileSync(file ?? '', readFileSync(file ?? '', 'utf8').replace('"ok-name"', JSON.stringify(reviewer)));
      const answer = await post('/api/register/options', { token });
      expect([reviewer, answer.status]).toEqual([reviewer, 404]);
      expect(errorOf(answer)).toContain('cannot be read');
    }
  });

  test('a held keys-file lock does not stall the inbox for others while the registration waits for it', async () => {
    const { token } = await invites().create('ivan');
    const challenge = await begin(token);
    writeFileSync(`${keysFile()}.lock`, '');
    const order: string[] = [];
    try {
      const registering = post('/api/register', { token, response: new SoftPasskey('localhost', origin).registration(challenge) }).then((a) => order.push(`register ${a.status}`));
      await new Promise((r) => setTimeout(r, 300));
      await call(port, { path: '/assets/inbox.css' }).then((a) => order.push(`page ${a.status}`));
      await registering;
    } finally {
      const { unlinkSync } = await import('node:fs');
      unlinkSync(`${keysFile()}.lock`);
    }
    expect(order).toEqual(['page 200', 'register 503']);
  });

  test('a held keys-file lock is a clear, retryable error and leaves the invite usable', async () => {
    logged.length = 0;
    const { token } = await invites().create('heidi');
    const challenge = await begin(token);
    writeFileSync(`${keysFile()}.lock`, '');
    try {
      const answer = await post('/api/register', { token, response: new SoftPasskey('localhost', origin).registration(challenge) });
      expect(answer.status).toBe(503);
      expect(errorOf(answer)).toContain('try again');
    } finally {
      const { unlinkSync } = await import('node:fs');
      unlinkSync(`${keysFile()}.lock`);
    }
    const done = await post('/api/register', { token, response: new SoftPasskey('localhost', origin).registration(challenge) });
    expect(done.status).toBe(200);
  });
});

test('with Temporal unreachable a flood is answered and the server keeps serving', async () => {
  const downPort = await freePort();
  const down = parseConfig({ TEMPORAL_ADDRESS: '127.0.0.1:1', AIRLOCK_DATA_DIR: join(h.dir, 'down'), AIRLOCK_INBOX_LISTEN: `127.0.0.1:${downPort}` });
  const downLog: string[] = [];
  const server = await startInboxServer({ config: down, site: inboxSite(down), cli: 'airlock', log: (l) => downLog.push(l) });
  try {
    const host = { Host: `localhost:${downPort}` };
    const answers = await Promise.all(
      Array.from({ length: 60 }, (_, i) => call(downPort, { path: ['/', '/api/pending', '/partials/list', '/jobs/j/requests/r'][i % 4], headers: host })),
    );
    expect(answers.map((a) => a.status)).toEqual(Array.from({ length: 60 }, (_, i) => [200, 503, 200, 503][i % 4]));
    expect((await call(downPort, { path: '/assets/inbox.css', headers: host })).status).toBe(200);
    expect(downLog).toEqual([]);
  } finally {
    await server.close();
  }
});

test('a script without a passkey can add only a bounded number of rejected decisions to a job through the page', async () => {
  const limitedPort = await freePort();
  const limited = parseConfig({ TEMPORAL_ADDRESS: h.env.address, TEMPORAL_NAMESPACE: h.env.namespace, AIRLOCK_DATA_DIR: join(h.dir, 'data'), AIRLOCK_INBOX_LISTEN: `127.0.0.1:${limitedPort}` });
  const server = await startInboxServer({ config: limited, site: inboxSite(limited), cli: 'airlock', log: () => undefined, decisionLimits: { perJob: 3, overall: 100, windowMs: 60_000 } });
  try {
    writeFileSync(join(h.root, 'flooded.txt'), 'f');
    h.setRules({ version: 1, rules: [{ id: 'signed-deletes', version: 1, name: 'signed deletes', scope: { categories: ['delete'] }, action: 'request_approval', approval: { signatureRequired: true } }] });
    const { jobId } = await h.start({ script: { turns: [{ tool_calls: [{ name: 'fs_delete', arguments: { path: 'flooded.txt' } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'ok' } }] }] } });
    const [request] = (await h.waitForPending(jobId)).pending;
    const payload = { requestId: request?.requestId, fingerprint: request?.fingerprint, nonce: request?.nonce, decision: 'approve', reviewer: 'mallory' };
    // Well-formed, signed by nobody registered: each one the page forwards is verified, rejected and audited by the job.
    const junk = new SoftPasskey('localhost', `http://localhost:${limitedPort}`).assert('AAAA');
    const response = { id: junk.credentialId, rawId: junk.credentialId, type: 'public-key', response: { authenticatorData: junk.authenticatorData, clientDataJSON: junk.clientDataJSON, signature: junk.signature } };
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const answer = await call(limitedPort, {
        method: 'POST',
        path: '/api/decision',
        headers: { Host: `localhost:${limitedPort}`, 'Content-Type': 'application/json', Origin: `http://localhost:${limitedPort}` },
        body: JSON.stringify({ jobId, payload, response }),
      });
      statuses.push(answer.status);
      if (answer.status === 429) expect(errorOf(answer)).toMatch(/took 3 decisions for job .* in 1 minutes; try again later, or decide from the command line/);
    }
    expect(statuses).toEqual([200, 200, 200, 429, 429, 429]);
    const rejected = await h.waitFor(jobId, () => h.audit(jobId, 'approval_rejected').length >= 3, 'the forwarded rejections audited');
    expect(rejected.pending).toHaveLength(1);
    expect(h.audit(jobId, 'approval_rejected').map((e) => e.data.code)).toEqual(['signature_invalid', 'signature_invalid', 'signature_invalid']);
    // Other jobs are not held up by one job's limit.
    expect((await post('/api/decision', { jobId: 'another-job', payload, response })).status).not.toBe(429);
  } finally {
    await server.close();
  }
});
