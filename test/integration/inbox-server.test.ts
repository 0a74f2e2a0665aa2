import { createHash } from 'node:crypto';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Identify } from '../../servers/inbox/identify';
import { startInboxServer, type InboxServer } from '../../servers/inbox/inbox-server';
import { inboxSite } from '../../servers/inbox/site';
import { freePort } from '../helpers/ports';
import { parseConfig, type AirlockConfig } from '../../core/config/config';
import { decisionChallenge } from '../../core/approval/decision-challenge';
import { INVITE_TTL_MS } from '../../host/stores/passkey-invites/store';
import { PasskeyInvites } from '../../host/stores/passkey-invites/files';
import { statePaths } from '../../host/config/paths';
import { updateReviewerKeysFile } from '../../host/keys/reviewer-keys-file';
import { ReviewerKeysFile } from '../../host/keys/reviewer-keys';
import { JobHarness } from '../helpers/job-harness';
import { call, type Answer } from '../helpers/raw-http';
import { SoftPasskey } from '../helpers/soft-passkey';

let h: JobHarness;
let config: AirlockConfig;
let inbox: InboxServer;
let port: number;
let origin: string;

/** A same-origin JSON POST, as the page sends it. */
const post = (path: string, value: unknown, headers: Record<string, string> = {}) =>
  call(port, { method: 'POST', path, headers: { 'Content-Type': 'application/json', Origin: origin, 'Sec-Fetch-Site': 'same-origin', ...headers }, body: JSON.stringify(value) });

const errorOf = (answer: Answer) => (JSON.parse(answer.body) as { error: string }).error;

beforeAll(async () => {
  port = await freePort();
  origin = `http://localhost:${port}`;
  const read: { file?: ReviewerKeysFile } = {};
  h = await JobHarness.create({ reviewerKeys: { get: (r) => read.file?.get(r), passkeys: (r) => read.file?.passkeys(r) ?? [] } });
  config = parseConfig({ TEMPORAL_ADDRESS: h.env.address, TEMPORAL_NAMESPACE: h.env.namespace, AIRLOCK_DATA_DIR: join(h.dir, 'data'), AIRLOCK_INBOX_LISTEN: `127.0.0.1:${port}` });
  read.file = ReviewerKeysFile.open(statePaths(config).reviewerKeys, { mustExist: false });
  inbox = await startInboxServer({ config, site: inboxSite(config), cli: 'airlock', log: () => undefined });
});
afterAll(async () => {
  await inbox?.close();
  await h?.close();
});

describe('what the server refuses', () => {
  test('a Host that is neither the public host nor the listen address (DNS rebinding) gets nothing', async () => {
    const rebound = await call(port, { headers: { Host: `attacker.example:${port}` } });
    expect(rebound.status).toBe(421);
    expect(rebound.body).not.toContain('Waiting for approval');
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`]) expect((await call(port, { headers: { Host: host } })).status).toBe(200);
  });

  test('every answer forbids framing, inline script, sniffing, referrers and caching, and sets no cookie', async () => {
    for (const path of ['/', '/register', '/assets/inbox.js', '/nowhere']) {
      const answer = await call(port, { path });
      expect(answer.headers['content-security-policy']).toContain("default-src 'self'");
      expect(answer.headers['content-security-policy']).toContain("frame-ancestors 'none'");
      expect(answer.headers['x-content-type-options']).toBe('nosniff');
      expect(answer.headers['referrer-policy']).toBe('no-referrer');
      expect(answer.headers['cache-control']).toBe('no-store');
      expect(answer.headers['set-cookie']).toBeUndefined();
    }
    const pageHtml = (await call(port, { path: '/' })).body;
    // No inline script: the CSP would refuse it anyway.
    expect(pageHtml.match(/<script[^>]*>[^<]/g)).toBeNull();
  });

  test('a POST must be JSON from the public origin (CSRF), small, and well-formed', async () => {
    const body = { jobId: 'x', requestId: 'y', decision: 'approve', reviewer: 'alice' };
    const asForm = await post('/api/decision/options', body, { 'Content-Type': 'application/x-www-form-urlencoded' });
    expect(asForm.status).toBe(415);
    expect(errorOf(asForm)).toBe('send JSON (Content-Type: application/json)');
    const noOrigin = await call(port, { method: 'POST', path: '/api/decision/options', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
    expect(noOrigin.status).toBe(403);
    const otherSite = await post('/api/decision/options', body, { Origin: 'https://attacker.example' });
    expect(otherSite.status).toBe(403);
    expect(errorOf(otherSite)).toContain('requests from https://attacker.example are refused');
    // The listen address is not the public origin either: passkeys are bound to the public one.
    expect((await post('/api/decision/options', body, { Origin: `http://127.0.0.1:${port}` })).status).toBe(403);
    const crossSite = await post('/api/decision/options', body, { 'Sec-Fetch-Site': 'cross-site' });
    expect(crossSite.status).toBe(403);
    const huge = await post('/api/decision/options', { ...body, reason: 'x'.repeat(70 * 1024) });
    expect(huge.status).toBe(413);
    const notJson = await call(port, { method: 'POST', path: '/api/decision', headers: { 'Content-Type': 'application/json', Origin: origin }, body: '{"jobId":' });
    expect(notJson.status).toBe(400);
    expect(errorOf(notJson)).toBe('the body is not valid JSON');
    const missing = await post('/api/decision/options', { jobId: 'x' });
    expect(missing.status).toBe(400);
    expect(errorOf(missing)).toMatch(/^invalid request: requestId: /);
    const extra = await post('/api/decision', { jobId: 'x', payload: {}, response: {}, cookie: 1 });
    expect(extra.status).toBe(400);
    expect(errorOf(extra)).not.toContain('\n');
    expect((await call(port, { method: 'DELETE', path: '/' })).status).toBe(405);
  });
});

describe('deciding through the server with a passkey', () => {
  let passkey: SoftPasskey;
  let jobId: string;
  let requestId: string;

  beforeAll(async () => {
    writeFileSync(join(h.root, 'old.tar'), 'x'.repeat(100));
    // A rule that wants a signed decision, as the built-in rules do.
    h.setRules({ version: 1, rules: [{ id: 'signed-deletes', version: 1, name: 'signed deletes', scope: { categories: ['delete'] }, action: 'request_approval', approval: { signatureRequired: true } }] });
    ({ jobId } = await h.start({
      jobId: `inbox-signed-${Date.now()}`,
      script: { turns: [{ tool_calls: [{ name: 'fs_delete', arguments: { path: 'old.tar' } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'ok' } }] }] },
    }));
    requestId = (await h.waitForPending(jobId)).pending[0]?.requestId ?? '';
    passkey = new SoftPasskey('localhost', origin);
  });

  test('the challenge is the decision itself, for the reviewer’s passkeys on this site; the job takes the assertion', async () => {
    const ask = { jobId, requestId, decision: 'approve', reviewer: 'alice', reason: 'old' };
    const none = await post('/api/decision/options', ask);
    expect(none.status).toBe(400);
    expect(errorOf(none)).toBe(`reviewer alice has no passkey for ${origin}; run \`airlock reviewer add alice --passkey\` and open the link it prints`);

    const keysFile = statePaths(config).reviewerKeys;
    const elsewhere = new SoftPasskey('airlock.other.example', 'https://airlock.other.example');
    updateReviewerKeysFile(keysFile, () => ({ alice: { passkeys: [passkey.registered(), elsewhere.registered()] } }));
    const denied = await post('/api/decision/options', { ...ask, decision: 'deny', reason: '' });
    expect(denied.status).toBe(400);
    expect(errorOf(denied)).toContain('say why you deny it');

    const prepared = await post('/api/decision/options', ask);
    expect(prepared.status).toBe(200);
    const { payload, options } = JSON.parse(prepared.body) as { payload: Record<string, unknown> & { fingerprint: string; nonce: string }; options: Record<string, unknown> };
    const state = await h.state(jobId);
    expect(payload).toEqual({ requestId, fingerprint: state.pending[0]?.fingerprint, nonce: state.pending[0]?.nonce, decision: 'approve', reviewer: 'alice', reason: 'old' });
    expect(options).toEqual({
      challenge: decisionChallenge(jobId, { requestId, fingerprint: payload.fingerprint, nonce: payload.nonce, decision: 'approve', reviewer: 'alice', reason: 'old' }),
      rpId: 'localhost',
      // Only the passkey made for this site.
      allowCredentials: [{ id: passkey.id, type: 'public-key' }],
      userVerification: 'required',
      timeout: 120_000,
    });

    const assertion = passkey.assert(String(options.challenge));
    const response = { id: assertion.credentialId, rawId: assertion.credentialId, type: 'public-key', clientExtensionResults: {}, response: { authenticatorData: assertion.authenticatorData, clientDataJSON: assertion.clientDataJSON, signature: assertion.signature } };
    const sent = await post('/api/decision', { jobId, payload, response });
    expect(sent.status).toBe(200);
    expect(JSON.parse(sent.body)).toMatchObject({ accepted: true, status: 'approved' });
    await h.waitFor(jobId, (s) => s.status === 'completed', 'completion');
    expect(existsSync(join(h.root, 'old.tar'))).toBe(false);

    // Decided: the card's page says so, the API says it waits no more, and a new decision is refused before signing.
    const gone = await call(port, { path: `/jobs/${jobId}/requests/${requestId}` });
    expect(gone.status).toBe(404);
    expect(gone.body).toContain('is not waiting for a decision');
    expect(JSON.parse((await call(port, { path: `/api/jobs/${jobId}/requests/${requestId}` })).body)).toMatchObject({ waiting: false });
    const again = await post('/api/decision/options', ask);
    expect(again.status).toBe(409);
    // Sent again to the ended job: nothing takes it.
    const replayed = await post('/api/decision', { jobId, payload, response });
    expect(replayed.status).toBe(404);
    expect(errorOf(replayed)).toBe(`job ${jobId} is not running (it has ended, or there is no such job)`);
  });
});

describe('identifying the reviewer by a passkey (a browser that remembers no name)', () => {
  let carol: SoftPasskey;
  const handleOf = (reviewer: string) => createHash('sha256').update(`airlock-reviewer:${reviewer}`).digest().toString('base64url');
  /** The browser's answer as the page sends it. */
  const answer = (a: ReturnType<SoftPasskey['assert']>) => ({
    response: {
      id: a.credentialId,
      rawId: a.credentialId,
      type: 'public-key',
      clientExtensionResults: {},
      response: { clientDataJSON: a.clientDataJSON, authenticatorData: a.authenticatorData, signature: a.signature, ...(a.userHandle !== undefined ? { userHandle: a.userHandle } : {}) },
    },
  });
  const challenge = async (): Promise<string> => {
    const asked = await post('/api/identify/options', {});
    expect(asked.status).toBe(200);
    return (JSON.parse(asked.body) as { options: { challenge: string } }).options.challenge;
  };

  beforeAll(() => {
    // Carol's passkey made on this site (the port is the one the page is opened at), next to whatever else is registered.
    carol = new SoftPasskey('localhost', origin);
    updateReviewerKeysFile(statePaths(config).reviewerKeys, (entries) => ({ ...entries, carol: { passkeys: [carol.registered()] } }));
  });

  test('any passkey of this site may answer a one-time challenge; the answer is the reviewer it is registered to', async () => {
    const asked = await post('/api/identify/options', {});
    expect(asked.status).toBe(200);
    const { options } = JSON.parse(asked.body) as { options: Record<string, unknown> & { challenge: string } };
    // No credential named: the authenticator offers its discoverable passkeys for this site.
    expect(options).toEqual({ challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), rpId: 'localhost', allowCredentials: [], userVerification: 'required', timeout: 60_000 });
    const signed = answer(carol.assert(options.challenge, { userHandle: handleOf('carol') }));
    const named = await post('/api/identify', signed);
    expect([named.status, JSON.parse(named.body)]).toEqual([200, { reviewer: 'carol' }]);
    // Used once.
    const again = await post('/api/identify', signed);
    expect([again.status, errorOf(again)]).toEqual([409, 'this identification was not started here, or took too long; try again']);
    // Without a user handle (some authenticators send none) the credential id alone names her.
    expect(JSON.parse((await post('/api/identify', answer(carol.assert(await challenge())))).body)).toEqual({ reviewer: 'carol' });
  });

  test('what does not name a reviewer is refused, and uses its challenge up', async () => {
    const never = await post('/api/identify', answer(carol.assert('A'.repeat(43))));
    expect([never.status, errorOf(never)]).toEqual([409, 'this identification was not started here, or took too long; try again']);

    const stranger = await post('/api/identify', answer(new SoftPasskey('localhost', origin).assert(await challenge())));
    expect([stranger.status, errorOf(stranger)]).toEqual([404, `this passkey is not registered to any reviewer on ${origin}; run \`airlock reviewer add NAME --passkey\` and open the link it prints`]);

    // A passkey registered for another address of the page is not one of this site's.
    const elsewhere = new SoftPasskey('localhost', 'http://localhost:1');
    updateReviewerKeysFile(statePaths(config).reviewerKeys, (entries) => ({ ...entries, erin: { passkeys: [elsewhere.registered()] } }));
    expect((await post('/api/identify', answer(elsewhere.assert(await challenge())))).status).toBe(404);

    // Carol's passkey, but signed on another origin, without user verification, or naming another user: no name, and the challenge is gone.
    const c1 = await challenge();
    const otherOrigin = await post('/api/identify', answer(carol.assert(c1, { origin: 'https://attacker.example' })));
    expect([otherOrigin.status, errorOf(otherOrigin)]).toEqual([400, expect.stringMatching(/^the passkey does not verify: /)]);
    expect((await post('/api/identify', answer(carol.assert(c1)))).status).toBe(409);
    const unverified = await post('/api/identify', answer(carol.assert(await challenge(), { userVerified: false })));
    expect([unverified.status, errorOf(unverified)]).toEqual([400, expect.stringMatching(/^the passkey does not verify: .*user could not be verified/i)]);
    const asBob = await post('/api/identify', answer(carol.assert(await challenge(), { userHandle: handleOf('bob') })));
    expect([asBob.status, errorOf(asBob)]).toEqual([400, 'the passkey names another user than reviewer carol, whose passkey it is registered as']);

    // Bodies are exactly what the page sends.
    expect((await post('/api/identify/options', { reviewer: 'carol' })).status).toBe(400);
    expect((await post('/api/identify', { ...answer(carol.assert(await challenge())), reviewer: 'mallory' })).status).toBe(400);
    const noChallenge = await post('/api/identify', answer(carol.assert('x', { clientData: { type: 'webauthn.get' } })));
    expect([noChallenge.status, errorOf(noChallenge)]).toEqual([400, 'invalid request: response.response.clientDataJSON: no challenge']);
  });

  test('challenges are rate-limited and expire', async () => {
    let now = Date.now();
    const identify = new Identify({ site: inboxSite(config), keysFile: statePaths(config).reviewerKeys, limits: { overall: 2, windowMs: 60_000 }, now: () => now });
    const first = (await identify.options({})) as { options: { challenge: string } };
    await identify.options({});
    await expect(identify.options({})).rejects.toMatchObject({ status: 429, message: 'the page took 2 passkey identifications in 1 minutes; try again later' });
    // After the prompt's time and a little more, the challenge is no longer good.
    now += 91_000;
    await expect(identify.answer(answer(carol.assert(first.options.challenge)))).rejects.toMatchObject({ status: 409 });
    // A new window: challenges again.
    await expect(identify.options({})).resolves.toBeDefined();
  });
});

describe('registration invites', () => {
  const registerOptions = (token: string) => post('/api/register/options', { token });

  test('an unknown, cut or expired link is a clear error; a failed registration leaves the invite usable', async () => {
    const invites = new PasskeyInvites(statePaths(config).inboxInvites);
    const { token } = await invites.create('bob');
    const ok = await registerOptions(token);
    expect(ok.status).toBe(200);
    const options = JSON.parse(ok.body) as { reviewer: string; options: { rp: { id: string }; authenticatorSelection: { userVerification: string }; attestation: string; user: { name: string } } };
    expect(options).toMatchObject({ reviewer: 'bob', options: { rp: { id: 'localhost' }, authenticatorSelection: { userVerification: 'required' }, attestation: 'none', user: { name: 'bob' } } });

    const unknown = await registerOptions('A'.repeat(43));
    expect(unknown.status).toBe(404);
    expect(errorOf(unknown)).toBe('this registration link was already used or is not known here; run `airlock reviewer add NAME --passkey` again for a new link');
    const cut = await registerOptions(token.slice(0, 10));
    expect(cut.status).toBe(404);
    expect(errorOf(cut)).toContain('is not complete');

    // A forged answer fails verification: nothing is added and the link still works.
    const forged = await post('/api/register', { token, response: { id: 'AAAA', rawId: 'AAAA', type: 'public-key', response: { clientDataJSON: 'AAAA', attestationObject: 'AAAA' }, clientExtensionResults: {} } });
    expect(forged.status).toBe(400);
    expect(errorOf(forged)).toMatch(/^the passkey registration does not verify/);
    expect((await registerOptions(token)).status).toBe(200);

    const old = await new PasskeyInvites(statePaths(config).inboxInvites, () => Date.now() - INVITE_TTL_MS - 1000).create('carol');
    const expired = await registerOptions(old.token);
    expect(expired.status).toBe(410);
    expect(errorOf(expired)).toMatch(/^this registration link for carol expired at .*; run `airlock reviewer add carol --passkey` again for a new link$/);
  });

  test('`reviewer add --passkey` stores only the token’s hash and prints the token in the link’s fragment', async () => {
    const added = await h.cli(['reviewer', 'add', 'dave', '--passkey', '--json'], { AIRLOCK_INBOX_LISTEN: `127.0.0.1:${port}` });
    expect(added).toMatchObject({ code: 0, stderr: '' });
    const { link } = JSON.parse(added.stdout) as { link: string };
    const token = link.split('#')[1] ?? '';
    expect(link).toBe(`${origin}/register#${token}`);
    const { readdirSync, readFileSync } = await import('node:fs');
    const dir = statePaths(config).inboxInvites;
    const stored = readdirSync(dir).map((f) => `${f} ${readFileSync(join(dir, f), 'utf8')}`).join('\n');
    expect(stored).not.toContain(token);
    expect((await registerOptions(token)).status).toBe(200);
    const bad = await h.cli(['reviewer', 'add', 'bad name', '--passkey']);
    expect(bad.code).not.toBe(0);
  });
});

test('with Temporal unreachable the page says so and the server keeps serving', async () => {
  const downPort = await freePort();
  const down = parseConfig({ TEMPORAL_ADDRESS: '127.0.0.1:1', AIRLOCK_DATA_DIR: join(h.dir, 'down'), AIRLOCK_INBOX_LISTEN: `127.0.0.1:${downPort}` });
  const server = await startInboxServer({ config: down, site: inboxSite(down), cli: 'airlock', log: () => undefined });
  try {
    const listed = await call(downPort, { headers: { Host: `localhost:${downPort}` } });
    expect(listed.status).toBe(200);
    expect(listed.body).toContain('Temporal at 127.0.0.1:1 cannot be reached');
    const asked = await call(downPort, {
      method: 'POST',
      path: '/api/decision/options',
      headers: { Host: `localhost:${downPort}`, 'Content-Type': 'application/json', Origin: `http://localhost:${downPort}` },
      body: JSON.stringify({ jobId: 'j', requestId: 'r', decision: 'approve', reviewer: 'alice' }),
    });
    expect(asked.status).toBe(503);
    expect((await call(downPort, { path: '/assets/inbox.css', headers: { Host: `localhost:${downPort}` } })).status).toBe(200);
  } finally {
    await server.close();
  }
});
