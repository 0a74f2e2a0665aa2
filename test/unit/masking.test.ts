import { CUT_MARGIN, maskPreview, maskString, maskValue, summarizeArgs } from '../../core/redaction/masking';

const MB = 1 << 20;

/** `unit` repeated to exactly `size` characters, flattened like text parsed from JSON. */
function fill(unit: string, size = MB): string {
  return (JSON.parse(JSON.stringify(unit.repeat(Math.ceil(size / unit.length)).slice(0, size))) as string);
}

/** Shapes that made the old patterns backtrack, and their mixtures; each about a megabyte. */
const adversarial: ReadonlyArray<[string, string]> = [
  ['repeated hex', fill('0123456789abcdef')],
  ['one letter', fill('A')],
  ['repeated words', fill('password token secret apikey bearer basic auth session ')],
  ['URL with many ":"', `https://${fill('a:')}`],
  ['URL with many "@"', `https://u:${fill('p@')}`],
  ['URLs with ":" and "@"', fill('x://a:b@c:d@')],
  ['URL user and no "@"', `https://user:${fill('ab')}`],
  ['URL schemes without "//"', fill('https:x')],
  ['key=key=key…', fill('key=')],
  ['PASSWORD=PASSWORD=…', fill('PASSWORD=')],
  ['names with dots', `${fill('a.')}PASSWORD`],
  ['one long secret name', `${fill('PASS')} x`],
  ['query of "?"', fill('?')],
  ['query names without "="', `?${fill('token')}`],
  ['query pairs', fill('?apikey=x&')],
  ['runs of -----BEGIN', fill('-----BEGIN ')],
  ['PEM headers without footer', fill('-----BEGIN RSA PRIVATE KEY-----')],
  ['bearer words', fill('bearer ')],
  ['bearer and spaces', `bearer${fill(' ')}`],
  ['sk- runs', fill('sk-')],
  ['JWT parts', `eyJ${fill('abcdefgh.')}`],
  ['eyJ- runs', fill('eyJ-')],
  ['ghp_ runs', fill('ghp_')],
  ['unicode', fill('映画🎬\u202e\u0000é\u2028 ')],
  ['unclosed quote', `PASSWORD="${fill('a')}`],
  ['a name, spaces, no value', `PASSWORD${fill(' ')}x`],
  ['mixture', fill('https://u:p@h/?token=x&key=key=-----BEGIN eyJabc. Bearer sk-ghp_ AKIA 映 ')],
];

/** Best of three runs: the machine is shared, the bound is about the code. */
function fastestMs(run: () => void): number {
  let best = Infinity;
  for (let i = 0; i < 3; i++) {
    const start = performance.now();
    run();
    best = Math.min(best, performance.now() - start);
  }
  return best;
}

beforeAll(() => {
  // Warm the code up so the first case does not pay for compilation.
  for (const [, text] of adversarial) maskString(text.slice(0, 4096));
});

describe('masking takes linear time', () => {
  // Timings on a shared machine are noisy: the bounds are far above the ~3–35 ms a megabyte takes (best of
  // three, even under load) and far below what a quadratic pattern takes (20k characters took 0.5 s, so a
  // megabyte would take about 20 minutes); the ratio, with a floor, catches growth faster than linear.
  test.each(adversarial)('%s: a megabyte masks in linear time, far from a backtracking pattern', (_name, text) => {
    expect(text.length).toBeGreaterThanOrEqual(MB);
    const eighth = fastestMs(() => maskString(text.slice(0, MB / 8)));
    const whole = fastestMs(() => maskString(text));
    expect(whole).toBeLessThan(5000);
    expect(whole).toBeLessThan(Math.max(eighth, 25) * 8 * 4);
  });

  test.each(adversarial)('%s: a secret inside it is still masked', (_name, text) => {
    const half = text.length >> 1;
    const secret = 'hunter2-Zq9Wv7';
    const embedded = `${text.slice(0, half)}\nexport DB_PASSWORD=${secret}\n${text.slice(half)}\nAuthorization: Bearer ${secret}xyz`;
    const masked = maskString(embedded);
    expect(masked).not.toContain(secret);
  });

  test('cost grows with the length, not its square', () => {
    // The old URL pattern took 0.5 s for 20k characters and 2.4 s for 40k.
    const small = fastestMs(() => maskString(fill('0123456789abcdef', MB / 8)));
    const large = fastestMs(() => maskString(fill('0123456789abcdef', MB)));
    expect(large).toBeLessThan(Math.max(small, 1) * 8 * 4);
  });

  test('maskValue on huge strings, deep in a value, stays fast', () => {
    const value = { path: 'a.txt', content: fill('0123456789abcdef'), nested: [{ note: fill('x://a:b@c:d@') }] };
    expect(fastestMs(() => maskValue(value))).toBeLessThan(200);
  });
});

describe('summaries mask only what they show', () => {
  const huge = fill('0123456789abcdef', 8 * MB);

  test('summarizeArgs and maskPreview do not depend on the size of the text', () => {
    expect(fastestMs(() => summarizeArgs({ path: 'a.txt', content: huge }))).toBeLessThan(20);
    expect(fastestMs(() => maskPreview(huge, 2000))).toBeLessThan(20);
  });

  test('the cut is marked with what is left', () => {
    expect(summarizeArgs({ content: huge }, 40)).toBe(`{"content":"${huge.slice(0, 28)}… (${huge.length + 14 - 40} more characters)`);
    expect(maskPreview(huge, 40)).toBe(`${huge.slice(0, 40)}… (${huge.length - 40} more characters)`);
    // Short text: exactly as truncate(maskString(text)).
    expect(summarizeArgs({ token: 'x', path: 'Bearer abcdefghijk' })).toBe('{"token":"***","path":"Bearer ***"}');
    expect(maskPreview('key sk-proj-1234567890abcdef and more', 10)).toBe('key *** an… (6 more characters)');
  });

  test.each([
    ['a bearer token', (pad: string) => `${pad} Bearer ${'x'.repeat(40)}`],
    ['an assignment', (pad: string) => `${pad} DB_PASSWORD=${'x'.repeat(40)}`],
    ['a URL password', (pad: string) => `${pad} https://me:${'x'.repeat(40)}@host/`],
    ['a JWT', (pad: string) => `${pad} eyJ${'x'.repeat(40)}.${'x'.repeat(40)}.${'x'.repeat(40)}`],
    ['a quoted value', (pad: string) => `${pad} token: "${'x '.repeat(40)}"`],
    ['a PEM block', (pad: string) => `${pad} -----BEGIN PRIVATE KEY-----\n${'x'.repeat(64)}\n-----END PRIVATE KEY-----`],
  ])('%s cut by the summary is not half shown', (_name, make) => {
    for (let shift = 0; shift < 30; shift++) {
      const text = make('.'.repeat(280 + shift)) + fill('0', 3 * CUT_MARGIN);
      expect(maskPreview(text, 300)).not.toMatch(/x/);
      expect(summarizeArgs({ content: text }, 300)).not.toMatch(/x/);
    }
  });
});

describe('masking covers at least what it did', () => {
  test.each([
    // PEM blocks are masked first and whole, even when a token shape runs into the header.
    ['xoxb------BEGIN RSA PRIVATE KEY-----\nMIIBsecret\n-----END RSA PRIVATE KEY-----', 'xoxb-***'],
    ['a -----BEGIN PRIVATE KEY-----\nMIIB…', 'a ***'],
    ['x -----BEGIN EC PRIVATE KEY-----\nAAA\n-----END EC PRIVATE KEY----- y', 'x *** y'],
    ['-----BEGIN PUBLIC KEY-----\nAAA\n-----END PUBLIC KEY-----', '-----BEGIN PUBLIC KEY-----\nAAA\n-----END PUBLIC KEY-----'],
    // URL passwords, up to the last "@" of the authority.
    ['https://user:p@ss@host/x', 'https://user:***@host/x'],
    ['git clone ssh://git:s3cret@nas.lan:22/repo', 'git clone ssh://git:***@nas.lan:22/repo'],
    ['http://localhost:8080/path', 'http://localhost:8080/path'],
    // Query names that hold "?", and "&".
    ['https://h/p?pass?x=1&page=2', 'https://h/p?pass?x=***&page=2'],
    ['https://h/p?a=1&session_id=abc#frag', 'https://h/p?a=1&session_id=***#frag'],
    ['https://h/p?page=2', 'https://h/p?page=2'],
    // Settings.
    ['app.api_key: "abc def"', 'app.api_key: ***'],
    ["PRIVATE_KEY='x'", 'PRIVATE_KEY=***'],
    ['DB_PASSWORD="never closed', 'DB_PASSWORD=***'],
    // A summary masked again keeps what follows a mask (here JSON's "\n").
    ['{"content":"DB_PASSWORD=***\\nnext line"}', '{"content":"DB_PASSWORD=***\\nnext line"}'],
    ['password.txt: 4 bytes', 'password.txt: 4 bytes'],
    ['TOKEN.name=visible', 'TOKEN.name=visible'],
    ['x.y.AUTH_TOKEN = abc;', 'x.y.AUTH_TOKEN = ***;'],
    ['Authorization: Basic dXNlcjpwYXNzd29yZA==', 'Authorization: Basic ***'],
    // Key shapes.
    ['id eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4f', 'id ***'],
    ['-eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4f', '-***'],
    ['ghp_0123456789abcdefghij and xoxb-12345678-abc', '*** and ***'],
    ['映画 token=秘密 done', '映画 token=*** done'],
  ])('maskString(%j)', (input, expected) => {
    expect(maskString(input)).toBe(expected);
  });

  test('masking is idempotent', () => {
    for (const [, text] of adversarial) {
      const sample = text.slice(0, 2000);
      expect(maskString(maskString(sample))).toBe(maskString(sample));
    }
  });
});
