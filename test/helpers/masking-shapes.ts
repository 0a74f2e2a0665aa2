/**
 * Text shapes that made naive secret patterns backtrack, and their
 * mixtures, built to a length: what `test/unit/masking.test.ts` holds to
 * linear time and `npm run bench -- --only masking` times.
 */

export const MB = 1 << 20;

/** `unit` repeated to exactly `size` characters, flattened like text parsed from JSON. */
export function fill(unit: string, size = MB): string {
  return (JSON.parse(JSON.stringify(unit.repeat(Math.ceil(size / unit.length)).slice(0, size))) as string);
}

/** Shapes that made the old patterns backtrack, and their mixtures, built to a length (about that many characters). */
export const maskingShapes: ReadonlyArray<[string, (size: number) => string]> = [
  ['repeated hex', (n) => fill('0123456789abcdef', n)],
  ['one letter', (n) => fill('A', n)],
  ['repeated words', (n) => fill('password token secret apikey bearer basic auth session ', n)],
  ['URL with many ":"', (n) => `https://${fill('a:', n)}`],
  ['URL with many "@"', (n) => `https://u:${fill('p@', n)}`],
  ['URLs with ":" and "@"', (n) => fill('x://a:b@c:d@', n)],
  ['URL user and no "@"', (n) => `https://user:${fill('ab', n)}`],
  ['URL schemes without "//"', (n) => fill('https:x', n)],
  ['key=key=key…', (n) => fill('key=', n)],
  ['PASSWORD=PASSWORD=…', (n) => fill('PASSWORD=', n)],
  ['names with dots', (n) => `${fill('a.', n)}PASSWORD`],
  ['one long secret name', (n) => `${fill('PASS', n)} x`],
  ['query of "?"', (n) => fill('?', n)],
  ['query names without "="', (n) => `?${fill('token', n)}`],
  ['query pairs', (n) => fill('?apikey=x&', n)],
  ['runs of -----BEGIN', (n) => fill('-----BEGIN ', n)],
  ['PEM headers without footer', (n) => fill('-----BEGIN RSA PRIVATE KEY-----', n)],
  ['bearer words', (n) => fill('bearer ', n)],
  ['bearer and spaces', (n) => `bearer${fill(' ', n)}`],
  ['sk- runs', (n) => fill('sk-', n)],
  ['JWT parts', (n) => `eyJ${fill('abcdefgh.', n)}`],
  ['eyJ- runs', (n) => fill('eyJ-', n)],
  ['ghp_ runs', (n) => fill('ghp_', n)],
  ['unicode', (n) => fill('映画🎬\u202e\u0000é\u2028 ', n)],
  ['unclosed quote', (n) => `PASSWORD="${fill('a', n)}`],
  ['a name, spaces, no value', (n) => `PASSWORD${fill(' ', n)}x`],
  ['mixture', (n) => fill('https://u:p@h/?token=x&key=key=-----BEGIN eyJabc. Bearer sk-ghp_ AKIA 映 ', n)],
];
