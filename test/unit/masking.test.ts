import { CUT_MARGIN, maskPreview, maskString, maskValue, summarizeArgs } from '../../core/redaction/masking';
import { fill, maskingShapes, MB } from '../helpers/masking-shapes';
import { MASK, maskGitHubTokens, maskOpenAiKeys, maskSchemeCredentials, maskSlackTokens, secretPasses } from '../../core/redaction/secret-patterns';

const shapes = maskingShapes;

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

/**
 * One long run of a pass's own class after its literal, for each pass, built to a length, and what masking
 * makes of the text. A pattern whose run had a minimum length (`{8,}`) was a counted loop in V8, which keeps
 * a backtrack entry per character it takes: slower than linear past a megabyte, and a RangeError (its
 * stack overflowed) at about 6 MiB. Near misses (one character short, many times) end the list.
 */
const longRuns: ReadonlyArray<[string, (size: number) => string, (text: string) => string]> = [
  ['a bearer credential', (n) => `Authorization: Bearer ${fill('aZ0._~+/=-', n)}`, () => `Authorization: Bearer ${MASK}`],
  ['a scheme, then white space', (n) => `token${fill(' \t\u00a0', n)}abcdefgh`, () => `token ${MASK}`],
  ['an OpenAI key', (n) => `sk-${fill('aZ0_-', n)}`, () => MASK],
  ['a GitHub token', (n) => `ghp_${fill('aZ0_', n)}`, () => MASK],
  ['a fine-grained GitHub token', (n) => `github_pat_${fill('aZ0_', n)}`, () => MASK],
  ['a Slack token', (n) => `xoxb-${fill('aZ0-', n)}`, () => MASK],
  ['an AWS key id, too long to be one', (n) => `AKIA${fill('A0', n)}`, (text) => text],
  ['a JWT', (n) => `eyJ${fill('aZ0_-', n / 3)}.${fill('aZ0_-', n / 3)}.${fill('aZ0_-', n / 3)}`, () => MASK],
  ['a URL password', (n) => `https://me:${fill('p@ss:w0rd', n)}@nas.lan/`, () => `https://me:${MASK}@nas.lan/`],
  ['a URL user', (n) => `https://${fill('me.', n)}:pw@nas.lan/`, (text) => `${text.slice(0, -12)}:${MASK}@nas.lan/`],
  ['a query secret', (n) => `https://h/?token=${fill('v=?', n)}&page=2`, () => `https://h/?token=${MASK}&page=2`],
  ['a query name', (n) => `https://h/?${fill('session', n)}=abc`, (text) => `${text.slice(0, -3)}${MASK}`],
  ['an assignment', (n) => `DB_PASSWORD=${fill('hunter2', n)}`, () => `DB_PASSWORD=${MASK}`],
  ['a quoted assignment', (n) => `api_key: "${fill('a b,c;', n)}"`, () => `api_key: ${MASK}`],
  ['a PEM block', (n) => `-----BEGIN PRIVATE KEY-----\n${fill('MIIBab+/', n)}\n-----END PRIVATE KEY-----`, () => MASK],
  ['a PEM label', (n) => `-----BEGIN ${fill('RSA ', n)}PRIVATE KEY-----\nMIIB`, () => MASK],
  ['credentials one short', (n) => fill('Bearer abcdefg token\tabcdefg ', n), (text) => text],
  ['OpenAI keys one short', (n) => fill('sk-abcdefg ', n), (text) => text],
  ['GitHub tokens one short', (n) => fill('ghp_abcdefghi github_pat_abcdefghi ', n), (text) => text],
  ['Slack tokens one short', (n) => fill('xoxb-abcdefg ', n), (text) => text],
  ['AWS key ids one short', (n) => fill('AKIA0123456789ABCDE ', n), (text) => text],
];

/** `actual` is `expected`, reported by length and ends: a failure must not print megabytes. */
function expectSameText(actual: string, expected: string): void {
  const view = (text: string) => ({ length: text.length, start: text.slice(0, 40), end: text.slice(-40) });
  expect(view(actual)).toEqual(view(expected));
  expect(actual === expected).toBe(true);
}

describe('each pass takes one long run of its own class', () => {
  test.each(longRuns)('%s: 32 MiB in one run masks, with no RangeError', (_name, build, masked) => {
    const text = build(32 * MB);
    expect(text.length).toBeGreaterThanOrEqual(32 * MB);
    expectSameText(maskString(text), masked(text));
  });

  // 8 MiB in one text costs what 64 texts of 128 KiB cost: about 1. The counted runs cost 4 to 8 times that
  // at 2 to 4 MiB, and threw past 6 MiB. Up to 4 leaves room for a loaded machine, as above.
  test.each(longRuns)('%s: 8 MiB in one run costs what 64 pieces of it cost', (_name, build) => {
    expect(growth(build, 8 * MB, 64)).toBeLessThan(4);
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

describe('key shapes read by a loop mask exactly what their patterns did', () => {
  // The patterns these passes replaced, kept as the reference on short inputs, and a shortest key for each.
  const before: ReadonlyArray<[string, (text: string) => string, (text: string) => string, readonly string[]]> = [
    ['credentials', maskSchemeCredentials, (t) => t.replace(/\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}/gi, `$1 ${MASK}`), ['Bearer abcdefgh', 'basic abcdefgh', 'TOKEN\tabcdefgh']],
    ['OpenAI keys', maskOpenAiKeys, (t) => t.replace(/\bsk-[A-Za-z0-9_-]{8,}/g, MASK), ['sk-abcdefgh']],
    ['GitHub tokens', maskGitHubTokens, (t) => t.replace(/\b(?:gh[pousr]|github_pat)_[A-Za-z0-9_]{10,}/g, MASK), ['ghp_abcdefghij', 'github_pat_abcdefghij']],
    ['Slack tokens', maskSlackTokens, (t) => t.replace(/\bxox[abprs]-[A-Za-z0-9-]{8,}/g, MASK), ['xoxb-abcdefgh']],
  ];

  /** Runs 7/8/9 and 9/10/11 long, keys inside words, next to each other and inside each other, unicode around. */
  const tricky: readonly string[] = [
    '',
    ...['sk-', 'xoxa-', 'xoxb-', 'xoxp-', 'xoxr-', 'xoxs-', 'xoxz-', 'Bearer ', 'basic ', 'TOKEN ', 'bearer\t', 'bearer \n ', 'bearer\u00a0', 'bearer\u2028', 'bearer\ufeff', 'bearer\u3000', 'bearer\u0085', 'bearer\u180e'].flatMap((head) => [7, 8, 9].map((n) => head + 'aB3-_.~+/='.repeat(2).slice(0, n))),
    ...['ghp_', 'gho_', 'ghu_', 'ghs_', 'ghr_', 'ghx_', 'github_pat_', 'github_pa_', 'GHP_'].flatMap((head) => [9, 10, 11].map((n) => head + 'aB3_-'.repeat(3).slice(0, n))),
    'xsk-abcdefgh _sk-abcdefgh -sk-abcdefgh .sk-abcdefgh ésk-abcdefgh 映sk-abcdefgh 🎬sk-abcdefgh SK-abcdefgh',
    'sk-abcdefgh映 sk-abcdefghé sk-abcdefg映h sk-abcdefgh🎬 sk-abc\u0000defgh sk-abcdefg\u2028h',
    'sk-sk-abcdefgh sk-abcdefghsk-abcdefgh sk-abcdefg-sk-abcdefgh sk-abcdefgh sk-abcdefgh sk-abcdefg sk-abcdefgh',
    'sk-abcd-sk-abcd sk-ab-sk-abcdefgh sk-sk-sk-sk- sk-*** ***sk-abcdefgh sk-abcdefgh***',
    'aghp_abcdefghij _ghp_abcdefghij -ghp_abcdefghij ghp_ghp_abcdefghij ghp_abcdefghij-ghp_abcdefghij ghp_abcdefghij映',
    'github_pat_github_pat_abcd github_patghp_abcdefghij github_ghp_abcdefghij ghp_abcdefghijéghp_abcdefghij',
    'xoxb-xoxb-abcdefgh xxoxb-abcdefgh -xoxb-abcdefgh xoxb-abc_defgh xoxb-abcdefgh_x xoxb-abcdefg-xoxb-abcdefgh',
    'bearer a.token abcdefghij',
    'basic bearer abcdefgh token token token abcdefgh',
    'tokenabc abcdefgh xbearer abcdefgh _basic abcdefgh -token abcdefgh ébearer abcdefgh 映token abcdefgh',
    'BeArEr abcdefgh bEARER\tabcdefgh BASIC  dXNlcjpwYXNz== Token ghp_abcdefghij Bearer sk-abcdefgh',
    'bearer ſſſſſſſſ bearer KKKKKKKK bearer ıııııııı bearer İİİİİİİİ beſrer abcdefgh toKen abcdefgh',
    'bearer abc/def+ghi~=.-_ bearer ***  Bearer abcdefgh Bearer abcdefgh,bearer abcdefgh;bearer abcdefgh',
    'bearer abcdefg\u00e9h bearer\r\nabcdefgh bearer \u200babcdefgh bearer\u200aabcdefgh',
    'Authorization: Bearer eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4f https://u:token abcdefgh@h/',
  ];

  /** Code units for every position of a key: ASCII, Latin-1, the white space, case-folding oddities, surrogates. */
  const units = [
    ...Array.from({ length: 0x300 }, (_, c) => String.fromCharCode(c)),
    ...'\u1680\u2000\u200a\u200b\u2028\u2029\u202f\u205f\u3000\ufeff\u180e\u212a\u017f\u0131\u0130\ud83c\udfac\ud800\udc00\uffff映',
  ];

  /** `key` with `unit` put in before each position and in place of each character. */
  function around(key: string, unit: string): string[] {
    const texts: string[] = [];
    for (let i = 0; i <= key.length; i++) {
      texts.push(key.slice(0, i) + unit + key.slice(i));
      if (i < key.length) texts.push(key.slice(0, i) + unit + key.slice(i + 1));
    }
    return texts;
  }

  function expectSameAsBefore(pass: (text: string) => string, old: (text: string) => string, texts: Iterable<string>): void {
    for (const text of texts) {
      const masked = pass(text);
      // Compared as strings first: toEqual on every input would be slow.
      if (masked !== old(text)) expect({ text, masked }).toEqual({ text, masked: old(text) });
    }
  }

  test.each(before)('%s: the same output on tricky inputs', (_name, pass, old) => {
    expectSameAsBefore(pass, old, tricky);
    expectSameAsBefore(pass, old, [tricky.join(' '), tricky.join(''), tricky.join('\n')]);
  });

  test.each(before)('%s: the same output with any character in or around a shortest key', (_name, pass, old, keys) => {
    for (const key of keys) {
      for (const unit of units) expectSameAsBefore(pass, old, around(key, unit));
      // Every UTF-16 code unit just before the key, as its first character, and after it.
      for (let c = 0; c <= 0xffff; c++) {
        const unit = String.fromCharCode(c);
        expectSameAsBefore(pass, old, [unit + key, unit + key.slice(1), key + unit, `${key.slice(0, -1)}${unit}x`]);
      }
    }
  });

  test.each(before)('%s: the same output on random mixtures of key parts', (_name, pass, old) => {
    const parts = ['sk-', 'ghp_', 'gho_', 'ghx_', 'github_pat_', 'github_', 'xoxb-', 'xoxs-', 'xoxz-', 'bearer', 'Bearer', 'BASIC', 'token', ' ', '\t', '\n', '\u00a0', '\u2028', 'a', 'Z', '0', '_', '-', '.', '~', '+', '/', '=', 'abcdefg', 'é', '映', 'ſ', '\u212a', '🎬', MASK, '@', ':'];
    let seed = 0x5eed;
    // mulberry32: the same texts on every run.
    const random = () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 2 ** 32;
    };
    const texts = Array.from({ length: 20_000 }, () => Array.from({ length: 1 + Math.floor(random() * 24) }, () => parts[Math.floor(random() * parts.length)]).join(''));
    expectSameAsBefore(pass, old, texts);
  });

  test('maskString gives what the old patterns gave, in their place among the passes', () => {
    const replaced = new Map(before.map(([, pass, old]) => [pass, old]));
    for (const pass of replaced.keys()) expect(secretPasses).toContain(pass);
    const maskedBefore = (text: string) => secretPasses.reduce((out, pass) => (replaced.get(pass) ?? pass)(out), text);
    const texts = [...tricky, ...adversarial.map(([, text]) => text.slice(0, 4000)), ...longRuns.map(([, build]) => build(4000))];
    expectSameAsBefore(maskString, maskedBefore, texts);
  });
});
