import type { Socket } from 'node:net';
import { hostsConfigSchema } from '../../core/config/tools/hosts';
import { HttpEngine } from '../../host/net/http-engine';
import { formatHttpResult } from '../../host/net/http-exchange';
import { HttpFailed, HttpRefused, systemConnect, type ConnectTarget, type HttpRequestArgs, type Lookup } from '../../host/net/http-request';
import { recordingServer, type RecordingServer } from '../helpers/recording-server';

/**
 * The http_request engine against real servers on loopback. Every refused
 * case also runs a server where the request would land, and asserts it got
 * nothing; for addresses with no server (metadata, 10.0.0.1) a connect spy
 * shows no socket was even opened.
 */

let v4: RecordingServer;
let v6: RecordingServer;
let connects: ConnectTarget[];

const spyConnect = (target: ConnectTarget): Socket => {
  connects.push(target);
  return systemConnect(target);
};

/** Any public host allowed, unless `hosts` says otherwise. */
function engine(hosts: Record<string, unknown> = {}, lookup?: Lookup): HttpEngine {
  return new HttpEngine({ hosts: hostsConfigSchema.parse({ allow: ['*'], ...hosts }), connect: spyConnect, ...(lookup === undefined ? {} : { lookup }) });
}

/** Answers from a fixed table; a name not in it does not exist. */
function table(answers: Record<string, string[]>): Lookup & { calls: string[] } {
  const calls: string[] = [];
  const lookup = async (name: string) => {
    calls.push(name);
    const found = answers[name];
    if (found === undefined) throw Object.assign(new Error('not found'), { code: 'ENOTFOUND' });
    return found.map((address) => ({ address, family: address.includes(':') ? (6 as const) : (4 as const) }));
  };
  return Object.assign(lookup, { calls });
}

async function refusal(e: HttpEngine, args: HttpRequestArgs): Promise<string> {
  try {
    await e.send(args);
  } catch (err) {
    expect(err).toBeInstanceOf(HttpRefused);
    return (err as Error).message;
  }
  throw new Error(`expected ${args.url} to be refused`);
}

beforeAll(async () => {
  v4 = await recordingServer('127.0.0.1');
  v6 = await recordingServer('::1');
});
afterAll(async () => {
  await v4.close();
  await v6.close();
});
beforeEach(() => {
  connects = [];
  v4.received.length = 0;
  v6.received.length = 0;
});

describe('internal addresses are refused unless allowlisted', () => {
  test.each([
    ['127.0.0.1', () => `${v4.origin}/`, /127\.0\.0\.1 is a loopback address/],
    ['[::1]', () => `${v6.origin}/`, /::1 is a loopback address/],
    ['IPv4-mapped loopback', () => `http://[::ffff:127.0.0.1]:${v4.port}/`, /::ffff:7f00:1 is a loopback address/],
    ['loopback as one number', () => `http://2130706433:${v4.port}/`, /127\.0\.0\.1 is a loopback address/],
    ['0.0.0.0', () => `http://0.0.0.0:${v4.port}/`, /unspecified/],
  ])('%s: refused, the server there got nothing', async (_name, url, reason) => {
    expect(await refusal(engine(), { method: 'GET', url: url() })).toMatch(reason);
    expect(connects).toEqual([]);
    expect(v4.received).toEqual([]);
    expect(v6.received).toEqual([]);
  });

  test.each([
    ['http://169.254.169.254/latest/meta-data/', /cloud metadata/],
    ['http://[fd00:ec2::254]/latest/meta-data/', /cloud metadata/],
    ['http://[::ffff:169.254.169.254]/', /cloud metadata/],
    ['http://10.0.0.1/', /10\.0\.0\.1 is a private address/],
    ['http://192.168.1.1/', /private/],
    ['http://100.64.0.1/', /cgnat/],
    ['http://[fd12:3456::1]/', /private/],
    ['http://[fe80::1]/', /link-local/],
    ['http://224.0.0.1/', /multicast/],
    ['http://[2002:a00:1::1]/', /private/],
  ])('%s is refused before any connection', async (url, reason) => {
    expect(await refusal(engine(), { method: 'GET', url })).toMatch(reason);
    expect(connects).toEqual([]);
  });

  test('a name resolving to loopback is refused, and so is one with any internal answer', async () => {
    const lookup = table({ 'svc.example': ['127.0.0.1'], 'mixed.example': ['93.184.215.14', '10.0.0.1'] });
    const e = engine({}, lookup);
    expect(await refusal(e, { method: 'GET', url: `http://svc.example:${v4.port}/` })).toMatch(/127\.0\.0\.1 is a loopback address \(svc\.example resolves to it\)/);
    expect(await refusal(e, { method: 'GET', url: 'http://mixed.example/' })).toMatch(/10\.0\.0\.1 is a private address/);
    expect(connects).toEqual([]);
    expect(v4.received).toEqual([]);
  });

  test('hosts.allow: an unlisted name is not even resolved; an unlisted address is not connected to', async () => {
    const lookup = table({ 'api.example': ['192.0.2.10'], 'leak.example': ['192.0.2.11'] });
    const e = engine({ allow: ['api.example', '198.51.100.0/24'] }, lookup);
    expect(await refusal(e, { method: 'GET', url: 'http://secret-data.leak.example/' })).toMatch(/secret-data\.leak\.example is not in hosts\.allow/);
    expect(await refusal(e, { method: 'GET', url: 'http://192.0.2.10/' })).toMatch(/192\.0\.2\.10 is not in hosts\.allow/);
    expect(lookup.calls).toEqual([]);
    expect(connects).toEqual([]);
    expect((await e.resolve('http://api.example/')).addresses).toEqual(['192.0.2.10']);
    expect((await e.resolve('http://198.51.100.7/')).addresses).toEqual(['198.51.100.7']);
  });

  test('the system resolver: localhost is refused', async () => {
    expect(await refusal(engine(), { method: 'GET', url: `http://localhost:${v4.port}/` })).toMatch(/is a loopback address \(localhost resolves to it\)/);
    expect(connects).toEqual([]);
    expect(v4.received).toEqual([]);
  });

  test('a metadata address is reached only when listed by itself', async () => {
    const e = engine({ allowInternal: ['169.254.0.0/16', 'metadata.internal'] }, table({ 'metadata.internal': ['169.254.169.254'] }));
    expect(await refusal(e, { method: 'GET', url: 'http://169.254.169.254/' })).toMatch(/listed by itself/);
    expect(await refusal(e, { method: 'GET', url: 'http://metadata.internal/' })).toMatch(/listed by itself/);
    expect(connects).toEqual([]);
  });

  test.each([['127.0.0.1'], ['127.0.0.0/8'], ['local.test']])('allowlisted as %s, the local server is reached', async (entry) => {
    const e = engine({ allowInternal: [entry] }, table({ 'local.test': ['127.0.0.1'] }));
    const url = entry === 'local.test' ? `http://local.test:${v4.port}/hi` : `${v4.origin}/hi`;
    const result = await e.send({ method: 'GET', url });
    expect(result.status).toBe(200);
    expect(result.body).toBe('hello');
    expect(result.address).toBe('127.0.0.1');
    expect(v4.received).toHaveLength(1);
    expect(v4.received[0]!.headers.host).toBe(new URL(url).host);
  });

  test('allowlisted [::1] is reached over IPv6', async () => {
    const result = await engine({ allowInternal: ['::1'] }).send({ method: 'GET', url: `${v6.origin}/` });
    expect(result.status).toBe(200);
    expect(v6.received).toHaveLength(1);
  });
});

describe('redirects', () => {
  let hub: RecordingServer;
  beforeAll(async () => {
    // Redirects to whatever ?to= says, with the status ?status= says.
    hub = await recordingServer('127.0.0.1', (req, res) => {
      const q = new URL(req.url, 'http://x').searchParams;
      const to = q.get('to');
      if (to === null) return void res.end(JSON.stringify(req.headers));
      res.writeHead(Number(q.get('status') ?? 302), { location: to }).end();
    });
  });
  afterAll(() => hub.close());
  beforeEach(() => (hub.received.length = 0));

  const hubEngine = (lookup?: Lookup) => engine({ allowInternal: ['hub.test'] }, lookup ?? table({ 'hub.test': ['127.0.0.1'] }));
  const via = (to: string, status = 302) => `http://hub.test:${hub.port}/r?status=${status}&to=${encodeURIComponent(to)}`;

  test.each([
    ['127.0.0.1', () => `${v4.origin}/`],
    ['[::1]', () => `${v6.origin}/`],
    ['169.254.169.254', () => 'http://169.254.169.254/latest/meta-data/'],
    ['10.0.0.1', () => 'http://10.0.0.1/'],
  ])('a redirect from an allowed host to %s is refused', async (_name, target) => {
    const message = await refusal(hubEngine(), { method: 'GET', url: via(target()) });
    expect(message).toMatch(/^redirect to .* refused: /);
    expect(hub.received).toHaveLength(1);
    expect(v4.received).toEqual([]);
    expect(v6.received).toEqual([]);
    // Only the hub was connected to.
    expect(connects.map((c) => c.address)).toEqual(['127.0.0.1']);
  });

  test('an allowed redirect is followed; credentials are not carried to another origin', async () => {
    const lookup = table({ 'hub.test': ['127.0.0.1'], 'other.test': ['127.0.0.1'] });
    const e = engine({ allowInternal: ['hub.test', 'other.test'] }, lookup);
    const result = await e.send({
      method: 'GET',
      url: via(`http://other.test:${hub.port}/final`),
      headers: { Authorization: 'Bearer hub-only-credential-1234', Accept: 'application/json' },
    });
    expect(result.status).toBe(200);
    expect(result.redirects).toHaveLength(1);
    const seen = hub.received[1]!.headers;
    expect(seen.host).toBe(`other.test:${hub.port}`);
    expect(seen.accept).toBe('application/json');
    expect(seen.authorization).toBeUndefined();
    expect(hub.received[0]!.headers.authorization).toBe('Bearer hub-only-credential-1234');
  });

  test('a POST is not sent on to another origin', async () => {
    const lookup = table({ 'hub.test': ['127.0.0.1'], 'other.test': ['127.0.0.1'] });
    const e = engine({ allowInternal: ['hub.test', 'other.test'] }, lookup);
    const result = await e.send({ method: 'POST', url: via(`http://other.test:${hub.port}/final`, 307), body: 'data' });
    expect(result.status).toBe(307);
    expect(result.redirectNotFollowed).toMatch(/not sent on to another host/);
    expect(hub.received).toHaveLength(1);
  });

  test('the hop limit stops a redirect loop', async () => {
    const e = engine({ allowInternal: ['hub.test'], maxRedirects: 3 }, table({ 'hub.test': ['127.0.0.1'] }));
    let url = `http://hub.test:${hub.port}/end`;
    for (let i = 0; i < 5; i++) url = via(url);
    const result = await e.send({ method: 'GET', url });
    expect(result.redirects).toHaveLength(3);
    expect(result.redirectNotFollowed).toMatch(/more than 3 redirects/);
    expect(hub.received).toHaveLength(4);
  });
});

describe('a DNS answer that changes cannot reach a refused address', () => {
  /** Public first, loopback after: a resolver an attacker controls. */
  function rebinding(): Lookup & { calls: string[] } {
    const calls: string[] = [];
    const lookup = async (name: string) => {
      calls.push(name);
      return [{ address: calls.length === 1 ? '192.0.2.10' : '127.0.0.1', family: 4 as const }];
    };
    return Object.assign(lookup, { calls });
  }

  test('within one call the name is resolved once and the socket goes to that answer', async () => {
    const lookup = rebinding();
    const e = engine({ timeoutSeconds: 1 }, lookup);
    // 192.0.2.10 is a documentation address: nothing answers there.
    await expect(e.send({ method: 'GET', url: `http://rebind.test:${v4.port}/` })).rejects.toThrow(HttpFailed);
    expect(lookup.calls).toEqual(['rebind.test']);
    expect(connects.map((c) => c.address)).toEqual(['192.0.2.10']);
    expect(v4.received).toEqual([]);
  });

  test('checked once (as prepare does), then sent: the second answer is refused', async () => {
    const lookup = rebinding();
    const e = engine({ timeoutSeconds: 1 }, lookup);
    const seen = await e.resolve(`http://rebind.test:${v4.port}/`);
    expect(seen.addresses).toEqual(['192.0.2.10']);
    expect(await refusal(e, { method: 'GET', url: `http://rebind.test:${v4.port}/` })).toMatch(/127\.0\.0\.1 is a loopback address/);
    expect(connects).toEqual([]);
    expect(v4.received).toEqual([]);
  });
});

describe('secrets in headers appear in no output', () => {
  const secrets = {
    Authorization: 'Bearer zq8-auth-credential-0001',
    Cookie: 'sid=zq8-cookie-credential-0002',
    'Proxy-Authorization': 'Basic enE4LXByb3h5LWNyZWRlbnRpYWw=',
    'X-Api-Key': 'zq8-api-key-credential-0003',
  };
  const values = ['zq8-auth-credential-0001', 'zq8-cookie-credential-0002', 'enE4LXByb3h5LWNyZWRlbnRpYWw=', 'zq8-api-key-credential-0003'];
  let echo: RecordingServer;
  beforeAll(async () => {
    // Echoes the request's headers in its body and in its own headers, and sets a cookie.
    echo = await recordingServer('127.0.0.1', (req, res) => {
      res.writeHead(req.url.startsWith('/fail') ? 500 : 200, {
        'content-type': 'application/json',
        'set-cookie': 'session=zq8-set-cookie-0004; HttpOnly',
        'x-echo-auth': String(req.headers.authorization),
      });
      res.end(JSON.stringify(req.headers));
    });
  });
  afterAll(() => echo.close());

  function leaks(text: string): string[] {
    return [...values, 'zq8-set-cookie-0004'].filter((v) => text.includes(v));
  }

  test('in the result, its text for the model and its headers', async () => {
    const result = await engine({ allowInternal: ['127.0.0.1'] }).send({ method: 'GET', url: `${echo.origin}/`, headers: secrets });
    // The server really got them.
    expect(echo.received.at(-1)!.headers.authorization).toBe(secrets.Authorization);
    expect(result.body).toContain('"authorization"');
    expect(leaks(formatHttpResult(result))).toEqual([]);
    expect(leaks(JSON.stringify(result))).toEqual([]);
  });

  test('in errors and refusals', async () => {
    const closed = await recordingServer('127.0.0.1');
    await closed.close();
    const e = engine({ allowInternal: ['127.0.0.1'], maxRequestBytes: 4 });
    const errors: string[] = [];
    for (const args of [
      { method: 'GET' as const, url: `http://127.0.0.1:${closed.port}/?access_token=zq8-auth-credential-0001`, headers: secrets },
      { method: 'POST' as const, url: `${echo.origin}/`, headers: secrets, body: 'zq8-auth-credential-0001' },
      { method: 'GET' as const, url: `http://10.0.0.1/?token=zq8-auth-credential-0001`, headers: secrets },
      { method: 'GET' as const, url: `${echo.origin}/`, headers: { ...secrets, 'Bad Name': 'zq8-auth-credential-0001' } },
    ]) {
      await e.send(args).then(
        () => errors.push('no error'),
        (err: Error) => errors.push(err.message),
      );
    }
    expect(errors).toHaveLength(4);
    expect(errors).not.toContain('no error');
    expect(leaks(errors.join('\n'))).toEqual([]);
  });
});

describe('limits', () => {
  let big: RecordingServer;
  let silent: RecordingServer;
  let trickle: RecordingServer;
  beforeAll(async () => {
    big = await recordingServer('127.0.0.1', (_req, res) => res.end('x'.repeat(200_000)));
    silent = await recordingServer('127.0.0.1', () => undefined);
    // Answers at once, then never finishes the body.
    trickle = await recordingServer('127.0.0.1', (_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      res.write('partial');
    });
  });
  afterAll(async () => {
    await big.close();
    await silent.close();
    await trickle.close();
  });
  beforeEach(() => {
    big.received.length = 0;
    silent.received.length = 0;
  });

  test('the response body is cut at maxResponseBytes', async () => {
    const result = await engine({ allowInternal: ['127.0.0.1'], maxResponseBytes: 1000 }).send({ method: 'GET', url: `${big.origin}/` });
    expect(result.truncated).toBe(true);
    expect(result.bodyBytes).toBe(1000);
    expect(result.body).toBe('x'.repeat(1000));
    expect(formatHttpResult(result)).toMatch(/body cut at 1000 bytes/);
  });

  test('a body above maxRequestBytes is refused before anything is sent', async () => {
    const message = await refusal(engine({ allowInternal: ['127.0.0.1'], maxRequestBytes: 1000 }), { method: 'PUT', url: `${big.origin}/`, body: 'y'.repeat(1001) });
    expect(message).toMatch(/1001 bytes, more than the 1000 allowed/);
    expect(big.received).toEqual([]);
    expect(connects).toEqual([]);
  });

  test('a server that never answers hits the total timeout', async () => {
    await expect(engine({ allowInternal: ['127.0.0.1'], timeoutSeconds: 0.5 }).send({ method: 'GET', url: `${silent.origin}/` })).rejects.toThrow(
      /no complete response within 0\.5 s/,
    );
    expect(silent.received).toHaveLength(1);
  });

  test('a body that never ends hits the same timeout', async () => {
    await expect(engine({ allowInternal: ['127.0.0.1'], timeoutSeconds: 0.5 }).send({ method: 'GET', url: `${trickle.origin}/` })).rejects.toThrow(
      /no complete response within 0\.5 s/,
    );
  });

  test('headers the tool sets itself cannot be given', async () => {
    const e = engine({ allowInternal: ['127.0.0.1'] });
    expect(await refusal(e, { method: 'GET', url: `${big.origin}/`, headers: { Host: 'other.example' } })).toMatch(/set by the tool itself/);
    expect(await refusal(e, { method: 'GET', url: `${big.origin}/`, headers: { 'Transfer-Encoding': 'chunked' } })).toMatch(/set by the tool itself/);
    expect(await refusal(e, { method: 'GET', url: `http://user:pw@127.0.0.1:${big.port}/` })).toMatch(/credentials in the URL/);
    expect(big.received).toEqual([]);
  });
});
