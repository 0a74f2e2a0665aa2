import { createHash, randomBytes } from 'node:crypto';
import { canonicalJson } from '../../core/util/canonical-json';
import { callFingerprint } from '../../core/approval/fingerprint';
import { sha256Hex } from '../../core/util/sha256';

test.each(['', 'abc', 'a'.repeat(55), 'a'.repeat(56), 'a'.repeat(64), 'a'.repeat(1000), '日本語のファイル名 ✓ 🗂️'])(
  'sha256Hex matches node:crypto for %j',
  (text) => {
    expect(sha256Hex(text)).toBe(createHash('sha256').update(text, 'utf8').digest('hex'));
  },
);

test('sha256Hex matches node:crypto at every length around the block and padding edges, and for a megabyte', () => {
  const sizes = [...Array.from({ length: 200 }, (_, i) => i), 1 << 20, (1 << 20) + 55, (1 << 20) + 119];
  for (const size of sizes) {
    const bytes = randomBytes(size);
    expect([size, sha256Hex(bytes)]).toEqual([size, createHash('sha256').update(bytes).digest('hex')]);
  }
  // A view into a larger buffer hashes only its own bytes.
  const whole = randomBytes(300);
  const view = whole.subarray(37, 237);
  expect(sha256Hex(new Uint8Array(view.buffer, view.byteOffset, view.byteLength))).toBe(createHash('sha256').update(view).digest('hex'));
});

test('canonical JSON sorts keys at every depth and drops undefined fields', () => {
  expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: undefined } })).toBe('{"a":{"d":[1,{"y":2,"z":1}]},"b":1}');
  expect(canonicalJson({ a: 1, b: 2 })).toBe(canonicalJson({ b: 2, a: 1 }));
  expect(() => canonicalJson({ x: Number.NaN })).toThrow(/finite/);
  // Arrays as JSON has them: undefined and holes are null.
  // eslint-disable-next-line no-sparse-arrays
  expect(canonicalJson([1, undefined, , 'a'])).toBe(JSON.stringify([1, undefined, , 'a']));
});

test('the fingerprint binds job, scope, tool, arguments and rule version, not key order', () => {
  const base = { jobId: 'j1', scope: {}, toolName: 'fs_delete', normalizedArgs: { path: 'a', recursive: false }, ruleId: 'r', ruleVersion: 1 };
  const fp = callFingerprint(base);
  expect(fp).toMatch(/^[0-9a-f]{64}$/);
  expect(callFingerprint({ ...base, normalizedArgs: { recursive: false, path: 'a' } })).toBe(fp);
  for (const change of [
    { jobId: 'j2' },
    { scope: { movement: 'cleanup' } },
    { toolName: 'fs_chmod' },
    { normalizedArgs: { path: 'b', recursive: false } },
    { ruleId: 'other' },
    { ruleVersion: 2 },
  ]) {
    expect(callFingerprint({ ...base, ...change })).not.toBe(fp);
  }
});
