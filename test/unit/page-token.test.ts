import { decodePageToken, encodePageToken } from '../../client/page-token';

test('a page token gives back the bytes it was made of; anything else is refused', () => {
  const temporal = Buffer.from('{"LastStartTime":"2026-01-01T00:00:00Z","LastRunID":"r"}');
  const token = encodePageToken(temporal);
  expect(token).toMatch(/^[A-Za-z0-9_-]+$/);
  expect(decodePageToken(token)).toEqual({ kind: 'token', temporal: Buffer.from(temporal) });
  const changed = [...token].map((c, i) => (i === 12 ? (c === 'A' ? 'B' : 'A') : c)).join('');
  for (const bad of ['', 'garbage', 'AQ', token.slice(0, -1), token.slice(0, -4), `${token}A`, changed, token.replace(/^./, 'B'), `${token}==`, temporal.toString('base64')]) {
    expect({ bad, read: decodePageToken(bad) }).toEqual({ bad, read: { kind: 'invalid' } });
  }
});
