import { randomBytes } from 'node:crypto';
import { defaultPayloadConverter } from '@temporalio/common';
import { startCodecServer, type CodecServer } from '../../servers/codec/codec-server';
import { AesGcmCodec } from '../../host/temporal/payload-codec';

const codec = new AesGcmCodec({ current: 'k1', keys: new Map([['k1', randomBytes(32)]]) });
const token = randomBytes(24).toString('hex');
const ui = 'http://127.0.0.1:8233';
let server: CodecServer;
let base: string;

beforeAll(async () => {
  server = await startCodecServer({ codec, token, port: 0, origins: [ui] });
  base = server.endpoint.slice(0, server.endpoint.lastIndexOf('/'));
});
afterAll(async () => server.close());

const asJson = (p: { metadata?: Record<string, Uint8Array | null> | null; data?: Uint8Array | null }) => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? []).toString('base64')])),
  data: Buffer.from(p.data ?? []).toString('base64'),
});

test('the Web UI decodes with the token in the endpoint; other callers with it as a bearer token', async () => {
  const [encoded] = await codec.encode([defaultPayloadConverter.toPayload({ card: 'Waiting for approval' })]);
  const body = JSON.stringify({ payloads: [asJson(encoded!)] });
  const viaPath = await fetch(`${server.endpoint}/decode`, { method: 'POST', body, headers: { origin: ui, 'content-type': 'application/json', 'x-namespace': 'default' } });
  expect(viaPath.status).toBe(200);
  expect(viaPath.headers.get('access-control-allow-origin')).toBe(ui);
  const { payloads } = (await viaPath.json()) as { payloads: Array<{ data: string }> };
  expect(JSON.parse(Buffer.from(payloads[0]!.data, 'base64').toString())).toEqual({ card: 'Waiting for approval' });

  const viaBearer = await fetch(`${base}/decode`, { method: 'POST', body, headers: { authorization: `Bearer ${token}` } });
  expect(viaBearer.status).toBe(200);
  const encodedBack = await fetch(`${server.endpoint}/encode`, { method: 'POST', body: JSON.stringify({ payloads: [asJson(defaultPayloadConverter.toPayload('x'))] }) });
  expect(((await encodedBack.json()) as { payloads: Array<{ metadata: Record<string, string> }> }).payloads[0]!.metadata.encoding).toBe(
    Buffer.from('binary/encrypted').toString('base64'),
  );
});

test('no token, a wrong token or another browser origin gets nothing decoded', async () => {
  const [encoded] = await codec.encode([defaultPayloadConverter.toPayload('secret')]);
  const body = JSON.stringify({ payloads: [asJson(encoded!)] });
  expect((await fetch(`${base}/decode`, { method: 'POST', body })).status).toBe(401);
  expect((await fetch(`${base}/${'0'.repeat(48)}/decode`, { method: 'POST', body })).status).toBe(401);
  expect((await fetch(`${base}/decode`, { method: 'POST', body, headers: { authorization: 'Bearer wrong' } })).status).toBe(401);
  const evil = await fetch(`${server.endpoint}/decode`, { method: 'POST', body, headers: { origin: 'http://evil.example' } });
  expect(evil.status).toBe(403);
  expect(evil.headers.get('access-control-allow-origin')).toBeNull();
  const preflight = await fetch(`${server.endpoint}/decode`, { method: 'OPTIONS', headers: { origin: ui, 'access-control-request-method': 'POST' } });
  expect(preflight.status).toBe(204);
  expect(preflight.headers.get('access-control-allow-headers')).toMatch(/X-Namespace/);
  expect((await fetch(`${server.endpoint}/decode`, { method: 'POST', body: 'not json' })).status).toBe(400);
});
