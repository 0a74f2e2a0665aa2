import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { AesGcmCodec, CodecKeysError, ensureCodecKeys, loadCodecKeys } from '../../host/temporal/payload-codec';

const dir = mkdtempSync(join(tmpdir(), 'airlock-codec-'));
const key = () => randomBytes(32).toString('base64');

function keysFile(name: string, current: string, keys: Record<string, string>): string {
  const file = join(dir, name);
  writeFileSync(file, JSON.stringify({ version: 1, current, keys }));
  return file;
}

test('payloads round-trip, hide their content, and detect tampering', async () => {
  const file = join(dir, 'codec.yaml');
  expect(ensureCodecKeys(file)).toEqual({ created: true });
  expect(ensureCodecKeys(file)).toEqual({ created: false });
  expect(statSync(file).mode & 0o777).toBe(0o600);
  const codec = new AesGcmCodec(loadCodecKeys(file));
  const plain = defaultPayloadConverter.toPayload({ goal: 'rotate the backups', token: 'sk-canary0123456789' });
  const [encoded] = await codec.encode([plain]);
  expect(Buffer.from(encoded!.data!).toString('latin1')).not.toContain('canary');
  expect(Buffer.from(encoded!.metadata!.encoding!).toString()).toBe('binary/encrypted');
  const [decoded] = await codec.decode([encoded!]);
  expect(defaultPayloadConverter.fromPayload(decoded!)).toEqual({ goal: 'rotate the backups', token: 'sk-canary0123456789' });

  const tampered = Buffer.from(encoded!.data!);
  tampered[20] = (tampered[20] ?? 0) ^ 1;
  await expect(codec.decode([{ ...encoded!, data: tampered }])).rejects.toThrow();
  // Plain payloads (history from before the codec was on) pass through decode.
  expect(await codec.decode([plain])).toEqual([plain]);
});

test('keys rotate by id: new payloads use the current key, older ones still decode', async () => {
  const k1 = key();
  const old = new AesGcmCodec(loadCodecKeys(keysFile('one.json', 'k1', { k1 })));
  const [before] = await old.encode([defaultPayloadConverter.toPayload('written under k1')]);
  const rotated = new AesGcmCodec(loadCodecKeys(keysFile('two.json', 'k2', { k1, k2: key() })));
  const [after] = await rotated.encode([defaultPayloadConverter.toPayload('written under k2')]);
  expect(Buffer.from(after!.metadata!['encryption-key-id']!).toString()).toBe('k2');
  expect((await rotated.decode([before!, after!])).map((p) => defaultPayloadConverter.fromPayload(p))).toEqual(['written under k1', 'written under k2']);
  await expect(old.decode([after!])).rejects.toThrow(/key "k2", which this process does not have/);
});

test('a bad keys file names the file and the problem', () => {
  expect(() => loadCodecKeys(join(dir, 'missing.yaml'))).toThrow(CodecKeysError);
  expect(() => loadCodecKeys(keysFile('short.json', 'k1', { k1: 'c2hvcnQ=' }))).toThrow(/keys\.k1: a key is 32 bytes/);
  expect(() => loadCodecKeys(keysFile('nocurrent.json', 'k9', { k1: key() }))).toThrow(/current key k9 is not in keys/);
  expect(readFileSync(join(dir, 'codec.yaml'), 'utf8')).toMatch(/^version: 1/);
});
