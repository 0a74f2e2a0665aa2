import { CUT_MARGIN, maskPreview, maskString, maskValue, summarizeArgs } from '../../core/redaction/masking';

const MB = 1 << 20;

/** `unit` repeated to exactly `size` characters, flattened like text parsed from JSON. */
function fill(unit: string, size = MB): string {
  return (JSON.parse(JSON.stringify(unit.repeat(Math.ceil(size / unit.length)).slice(0, size))) as string);
}

/** Shapes that made the old patterns backtrack, and their mixtures, built to a length (about that many characters). */
const shapes: ReadonlyArray<[string, (size: number) => string]> = [
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

/** Each shape, about a megabyte. */
const adversarial: ReadonlyArray<[string, string]> = shapes.map(([name, build]) => [name, build(MB)]);

function msOf(run: () => void): number {
  const start = performance.now();
  run();
  return performance.now() - start;
}

/**
 * How many times longer `one` takes than `other`, each at its best over a
 * few rounds that run both (the machine is shared: a busy moment slows one
 * run, rarely every run of one side). Never a time: only ratios are
 * asserted, so a slow or loaded machine changes nothing; the times
 * themselves are bench figures (`npm run bench -- --only masking`).
 */
function costRatio(one: () => void, other: () => void, rounds = 5): number {
  let bestOne = Infinity;
  let bestOther = Infinity;
  for (let i = 0; i < rounds; i++) {
    bestOther = Math.min(bestOther, msOf(other));
    bestOne = Math.min(bestOne, msOf(one));
  }
  return bestOne / bestOther;
}

/**
 * Masking `build(size)` once against masking `pieces` texts of the same
 * shape, each `1 / pieces` as long: about 1 when the cost is linear in the
 * length, about `pieces` when it grows with its square.
 */
function growth(build: (size: number) => string, size: number, pieces: number): number {
  const whole = build(size);
  const parts = Array.from({ length: pieces }, () => build(size / pieces));
  return costRatio(
    () => maskString(whole),
    () => {
      for (const part of parts) maskString(part);
    },
  );
}

beforeAll(() => {
  // Warm the code up so the first case does not pay for compilation.
  for (const [, text] of adversarial) maskString(text.slice(0, 4096));
});

describe('masking takes linear time', () => {
  // A backtracking pattern is quadratic or worse: 20k characters of hex took the old URL pattern 0.5 s, so a
  // megabyte would take about 20 minutes. A megabyte in one text costs what 64 texts of 16 KiB cost when
  // masking is linear: about 1, up to 2 (4 on a loaded machine) for runs one greedy pattern takes whole,
  // like "sk-sk-…". Quadratic, it costs 64 times that: 10 is far from both. How long a megabyte takes is a
  // bench figure (`npm run bench -- --only masking`), never asserted here.
  test.each(shapes)('%s: a megabyte masks in linear time, far from a backtracking pattern', (_name, build) => {
    expect(build(MB).length).toBeGreaterThanOrEqual(MB);
    expect(growth(build, MB, 64)).toBeLessThan(10);
  });

  test.each(adversarial)('%s: a secret inside it is still masked', (_name, text) => {
    const half = text.length >> 1;
    const secret = 'hunter2-Zq9Wv7';
    const embedded = `${text.slice(0, half)}\nexport DB_PASSWORD=${secret}\n${text.slice(half)}\nAuthorization: Bearer ${secret}xyz`;
    const masked = maskString(embedded);
    expect(masked).not.toContain(secret);
  });

  test('cost grows with the length, not its square, over a wider range', () => {
    // The old URL pattern took 0.5 s for 20k characters and 2.4 s for 40k. Linear: about 1; quadratic: 64.
    expect(growth((n) => fill('0123456789abcdef', n), 4 * MB, 64)).toBeLessThan(8);
  });

  test('maskValue on huge strings, deep in a value, costs what masking those strings costs', () => {
    const content = fill('0123456789abcdef');
    const note = fill('x://a:b@c:d@');
    const value = { path: 'a.txt', content, nested: [{ note }] };
    // About 1 (a copy of the value besides); anything that grows with the value's size or depth, far more.
    expect(
      costRatio(
        () => maskValue(value),
        () => {
          maskString(content);
          maskString(note);
        },
      ),
    ).toBeLessThan(4);
  });
});

describe('summaries mask only what they show', () => {
  const huge = fill('0123456789abcdef', 8 * MB);

  test('summarizeArgs and maskPreview do not depend on the size of the text', () => {
    // 8 MiB against 64 KiB (both far longer than what is shown and its margin): the same cost, about 1,
    // where masking the whole text would make it 128. Many calls a side, so each side takes a while.
    const small = fill('0123456789abcdef', 64 * 1024);
    const calls = (run: () => void) => () => {
      for (let i = 0; i < 200; i++) run();
    };
    expect(costRatio(calls(() => summarizeArgs({ path: 'a.txt', content: huge })), calls(() => summarizeArgs({ path: 'a.txt', content: small })))).toBeLessThan(4);
    expect(costRatio(calls(() => maskPreview(huge, 2000)), calls(() => maskPreview(small, 2000)))).toBeLessThan(4);
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
