/**
 * The secret shapes masking recognises, one pass each, applied in order.
 *
 * Every pass runs in time linear in its input, whatever the input: masking
 * runs inside workflow code on text the model chose. A regular expression
 * stays here only when each of its quantified runs is bounded by a literal
 * or by a class it cannot share characters with, and when a failed attempt
 * cannot overlap the next one by more than a constant. Shapes that would
 * need backtracking (a name anywhere inside a run, a closing marker far
 * away) are read by small scanners that visit each character a bounded
 * number of times.
 *
 * An unbounded run in a pattern is `*` or `+` only: V8 walks those with a
 * loop that remembers where it started. A run with a minimum above 3
 * (`{8,}`) is a counted loop, which keeps a backtrack entry for each
 * character it takes: one long run made such a pattern slower past a
 * megabyte and overflow its stack (a RangeError) at about six. Key shapes
 * that need a minimum length are read by `keyPass` instead.
 */
export const MASK = '***';

type Pass = (text: string) => string;

const DOT = 0x2e;
const DASH = 0x2d;
const EQUALS = 0x3d;
const QUESTION = 0x3f;
const AMPERSAND = 0x26;
const HASH = 0x23;
const DOUBLE_QUOTE = 0x22;
const SINGLE_QUOTE = 0x27;
const COLON = 0x3a;
const COMMA = 0x2c;
const SEMICOLON = 0x3b;
const UNDERSCORE = 0x5f;
const TILDE = 0x7e;
const PLUS = 0x2b;
const SLASH = 0x2f;

/** `\s` exactly as JavaScript regular expressions define it. */
function isSpace(c: number): boolean {
  if (c < 0x80) return c === 0x20 || (c >= 0x09 && c <= 0x0d);
  return (
    c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff
  );
}

/**
 * A character class read by a plain loop: a table for ASCII, and one rule
 * for everything above it. One loop serves every class, so it stays fast.
 */
interface CharClass {
  readonly ascii: Uint8Array;
  readonly nonAscii: 'none' | 'spaces' | 'non-spaces';
}

function charClass(member: (c: number) => boolean, nonAscii: CharClass['nonAscii']): CharClass {
  const ascii = new Uint8Array(0x80);
  for (let c = 0; c < 0x80; c++) ascii[c] = member(c) ? 1 : 0;
  return { ascii, nonAscii };
}

function inClass(c: number, cls: CharClass): boolean {
  if (c < 0x80) return cls.ascii[c] === 1;
  if (cls.nonAscii === 'none') return false;
  return isSpace(c) === (cls.nonAscii === 'spaces');
}

/** The first index at or after `from` whose character is not in `cls`. */
function runEnd(text: string, from: number, cls: CharClass): number {
  let i = from;
  while (i < text.length && inClass(text.charCodeAt(i), cls)) i++;
  return i;
}

const isAsciiWord = (c: number) => (c >= 0x30 && c <= 0x39) || (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || c === 0x5f;

/** `\w`: [A-Za-z0-9_]. */
const WORD = charClass(isAsciiWord, 'none');
/** `\s`. */
const SPACE = charClass(isSpace, 'spaces');
/** [A-Za-z0-9_-]: a base64url token. */
const TOKEN = charClass((c) => isAsciiWord(c) || c === DASH, 'none');
/** [A-Za-z0-9-]: the rest of a Slack token. */
const SLACK_TOKEN = charClass((c) => (isAsciiWord(c) && c !== UNDERSCORE) || c === DASH, 'none');
/** [A-Za-z0-9._~+/=-]: an HTTP credential after its scheme (a b64token). */
const CREDENTIAL = charClass((c) => isAsciiWord(c) || c === DOT || c === TILDE || c === PLUS || c === SLASH || c === EQUALS || c === DASH, 'none');
/** [A-Z ]: between BEGIN/END and PRIVATE KEY in a PEM header. */
const PEM_LABEL = charClass((c) => (c >= 0x41 && c <= 0x5a) || c === 0x20, 'none');
/** [^=&\s#]: a query parameter's name. */
const QUERY_NAME = charClass((c) => c !== EQUALS && c !== AMPERSAND && c !== HASH && !isSpace(c), 'non-spaces');
/** [^&\s#]: a query parameter's value. */
const QUERY_VALUE = charClass((c) => c !== AMPERSAND && c !== HASH && !isSpace(c), 'non-spaces');
/** [^\s"',;&]: an unquoted setting's value. */
const PLAIN_VALUE = charClass(
  (c) => c !== DOUBLE_QUOTE && c !== SINGLE_QUOTE && c !== COMMA && c !== SEMICOLON && c !== AMPERSAND && !isSpace(c),
  'non-spaces',
);

/** Collects the output of a scanner: the text between masked ranges, and the masks. */
class Masked {
  // Concatenation, not an array joined at the end: far cheaper per mask in V8.
  private out = '';
  private copied = 0;

  constructor(private readonly text: string) {}

  /** Replaces text[from, to) by `by` (`MASK` unless told); ranges come in order and do not overlap. */
  mask(from: number, to: number, by = MASK): void {
    // Already what it would become (an earlier pass saw the same secret): nothing to change.
    if (to - from === by.length && this.text.startsWith(by, from)) return;
    this.out += this.text.slice(this.copied, from);
    this.out += by;
    this.copied = to;
  }

  result(): string {
    return this.copied === 0 ? this.text : this.out + this.text.slice(this.copied);
  }
}

/** `-----BEGIN [A-Z ]*PRIVATE KEY-----` (or END) at or after `from`: where it starts and ends. */
function findPemMarker(text: string, marker: string, from: number): { start: number; end: number } | undefined {
  const suffix = 'PRIVATE KEY';
  let at = text.indexOf(marker, from);
  while (at >= 0) {
    const labelStart = at + marker.length;
    const labelEnd = runEnd(text, labelStart, PEM_LABEL);
    if (labelEnd - labelStart >= suffix.length && text.startsWith(suffix, labelEnd - suffix.length) && text.startsWith('-----', labelEnd)) {
      return { start: at, end: labelEnd + 5 };
    }
    // The label holds no "-", so no other marker starts inside it.
    at = text.indexOf(marker, labelEnd);
  }
  return undefined;
}

/**
 * PEM private key blocks, header to footer. A block without its footer (cut
 * off, or never written) is masked to the end of the text: the key follows
 * its header. Runs first, so no later pass can break a footer apart.
 */
function maskPemBlocks(text: string): string {
  const out = new Masked(text);
  let from = 0;
  for (;;) {
    const begin = findPemMarker(text, '-----BEGIN ', from);
    if (begin === undefined) break;
    const end = findPemMarker(text, '-----END ', begin.end);
    out.mask(begin.start, end?.end ?? text.length);
    if (end === undefined) break;
    from = end.end;
  }
  return out.result();
}

/** A global regex replaced by a fixed string (`$1` is the first group): no call per match. */
function regexPass(pattern: RegExp, replacement: string): Pass {
  return (text) => text.replace(pattern, replacement);
}

/**
 * A key shape whose run must be at least some length: `head` (global, no
 * counted run) matches the shape's start at a word start and exactly the
 * minimum of its run; a loop takes the rest of the run (`cls`, the class
 * `head` ends with). The old pattern, `{min,}` in place of `{min}`, took the
 * same run greedily, with nothing after it: the same matches, without V8's
 * counted loop. A failed attempt reads no further than the minimum; a match
 * resumes after its run, as the pattern did. The key becomes `MASK`; when
 * `head` has a group (the scheme of a credential), the group stays and the
 * rest becomes one space and `MASK`.
 */
function keyPass(head: RegExp, cls: CharClass): Pass {
  return (text) => {
    const out = new Masked(text);
    head.lastIndex = 0;
    for (let found = head.exec(text); found !== null; found = head.exec(text)) {
      const end = runEnd(text, head.lastIndex, cls);
      const kept = found[1];
      if (kept === undefined) out.mask(found.index, end);
      else out.mask(found.index + kept.length, end, ` ${MASK}`);
      head.lastIndex = end;
    }
    return out.result();
  };
}

/**
 * Authorization headers and bearer/basic credentials: the scheme, white
 * space, and at least 8 characters of the credential.
 */
export const maskSchemeCredentials = keyPass(/\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8}/gi, CREDENTIAL);
/** OpenAI keys: `sk-` and at least 8 characters. */
export const maskOpenAiKeys = keyPass(/\bsk-[A-Za-z0-9_-]{8}/g, TOKEN);
/** GitHub tokens: `ghp_` (or gho_, ghu_, ghs_, ghr_, github_pat_) and at least 10 characters. */
export const maskGitHubTokens = keyPass(/\b(?:gh[pousr]|github_pat)_[A-Za-z0-9_]{10}/g, WORD);
/** Slack tokens: `xoxb-` (or xoxa-, xoxp-, xoxr-, xoxs-) and at least 8 characters. */
export const maskSlackTokens = keyPass(/\bxox[abprs]-[A-Za-z0-9-]{8}/g, SLACK_TOKEN);

/**
 * JSON Web Tokens: `eyJ` at a word start, then three base64url parts of at
 * least 8 characters separated by dots. A failed attempt skips the rest of
 * its first part: a later `eyJ` inside it would fail the same way.
 */
function maskJwts(text: string): string {
  const out = new Masked(text);
  let from = 0;
  for (;;) {
    const start = text.indexOf('eyJ', from);
    if (start < 0) break;
    if (start > 0 && inClass(text.charCodeAt(start - 1), WORD)) {
      from = start + 1;
      continue;
    }
    const first = runEnd(text, start + 3, TOKEN);
    from = first;
    if (first - start - 3 < 8 || text.charCodeAt(first) !== DOT) continue;
    const second = runEnd(text, first + 1, TOKEN);
    if (second - first - 1 < 8 || text.charCodeAt(second) !== DOT) continue;
    const third = runEnd(text, second + 1, TOKEN);
    if (third - second - 1 < 8) continue;
    out.mask(start, third);
    from = third;
  }
  return out.result();
}

const QUERY_SECRET_NAME = /pass|secret|token|key|sig|auth|credential|session/i;

/**
 * Where the query parameter name that ends at `equals` starts: after the
 * `&` that opens it, else after its first `?`; -1 when nothing opens it. The
 * name is the longest one the old pattern could match, so it holds every
 * secret word a shorter one would. Reads back only to the previous `=`.
 */
function queryNameStart(text: string, equals: number): number {
  let start = -1;
  for (let i = equals - 1; i >= 0; i--) {
    const c = text.charCodeAt(i);
    if (c === QUESTION) start = i + 1;
    else if (c === AMPERSAND) return i + 1;
    else if (!inClass(c, QUERY_NAME)) break;
  }
  return start;
}

/**
 * URL query parameters with secret-looking names, `?token=…` or `&…`: the
 * name runs from `?` or `&` to `=` and may hold further `?`. Each `=` is a
 * candidate; names of successive candidates never overlap.
 */
function maskQuerySecrets(text: string): string {
  const out = new Masked(text);
  let equals = text.indexOf('=');
  while (equals >= 0) {
    const start = queryNameStart(text, equals);
    // The value is read only when it is masked: it may hold "=", and is then skipped.
    const valueEnd = start >= 0 && QUERY_SECRET_NAME.test(text.slice(start, equals)) ? runEnd(text, equals + 1, QUERY_VALUE) : equals + 1;
    if (valueEnd > equals + 1) out.mask(equals + 1, valueEnd);
    equals = text.indexOf('=', valueEnd);
  }
  return out.result();
}

/** Found first by the assignment pass; each hit is then checked where it stands. */
// eslint-disable-next-line airlock/no-module-state -- every use sets lastIndex first and finishes synchronously
const SETTING_SECRET_WORD = /PASS|SECRET|TOKEN|API_?KEY|AUTH|CREDENTIAL|PRIVATE_?KEY/gi;
/** A value that is an authorization scheme; the bearer pass already masked its credential. */
// eslint-disable-next-line airlock/no-module-state -- as SETTING_SECRET_WORD
const SCHEME_VALUE = /(?:bearer|basic|token)\s/iy;

/** Whether the value at `start` is `bearer …`, `basic …` or `token …`. */
function isSchemeValue(text: string, start: number): boolean {
  const c = text.charCodeAt(start) | 0x20;
  if (c !== 0x62 && c !== 0x74) return false; // b, t
  SCHEME_VALUE.lastIndex = start;
  return SCHEME_VALUE.test(text);
}

/** Where the value starting at `start` ends; a quote never closed runs to the end of the text. */
function settingValueEnd(text: string, start: number): number {
  const c = text.charCodeAt(start);
  if (c === DOUBLE_QUOTE || c === SINGLE_QUOTE) {
    const close = text.indexOf(c === DOUBLE_QUOTE ? '"' : "'", start + 1);
    return close < 0 ? text.length : close + 1;
  }
  return runEnd(text, start, PLAIN_VALUE);
}

/**
 * Environment-style assignments and `key: value` pairs whose name holds a
 * secret word in its last dot- or dash-separated part: `DB_PASSWORD=…`,
 * `app.api_key: "…"`. The value after `=` or `:` is masked whole. The search
 * resumes past the rest of a hit's name part: a later word there ends the
 * same way.
 */
function maskAssignments(text: string): string {
  const out = new Masked(text);
  const words = SETTING_SECRET_WORD;
  words.lastIndex = 0;
  while (words.test(text)) {
    const nameEnd = runEnd(text, words.lastIndex, WORD);
    words.lastIndex = nameEnd;
    const separator = runEnd(text, nameEnd, SPACE);
    const sep = text.charCodeAt(separator);
    // "." or "-" right after: the word is not in the name's last part (no separator either).
    if (sep !== EQUALS && sep !== COLON) continue;
    const start = runEnd(text, separator + 1, SPACE);
    // Masked already: a summary masked again keeps what follows its masks (JSON's "\n", say).
    if (isSchemeValue(text, start) || text.startsWith(MASK, start)) continue;
    const end = settingValueEnd(text, start);
    if (end === start) continue;
    out.mask(start, end);
    words.lastIndex = end;
  }
  return out.result();
}

/** In order; PEM blocks first, whole. */
export const secretPasses: readonly Pass[] = [
  maskPemBlocks,
  // Authorization headers and bearer/basic credentials. An attempt starts on the
  // scheme word; white space and the token class are disjoint, and a failed attempt
  // reads its own white space and at most 8 characters.
  maskSchemeCredentials,
  // Well-known key shapes: OpenAI, GitHub, Slack, AWS. Each starts on a literal; a
  // failed attempt reads at most the minimum, a match consumes its run. AWS key ids
  // have a fixed length, so their pattern stays.
  maskOpenAiKeys,
  maskGitHubTokens,
  maskSlackTokens,
  regexPass(/\bAKIA[0-9A-Z]{16}\b/g, MASK),
  maskJwts,
  // Credentials inside URLs, scheme://user:password@host: the password runs from
  // the first ":" to the last "@" before white space or "/". Only "://" starts an
  // attempt, and the authorities of successive URLs never overlap.
  regexPass(/(:\/\/[^\s/:]*:)[^\s/]+@/g, `$1${MASK}@`),
  maskQuerySecrets,
  maskAssignments,
];
