/**
 * Secret masking applied before anything leaves the job: audit events,
 * reviewer views, judge input. Over-masking is preferred to a leak.
 */
export const MASK = '***';

const SECRET_KEY = /pass(word|wd|phrase)?|secret|token|api[-_]?key|apikey|auth(orization)?|credential|private[-_]?key|cookie|session|signature|sig$/i;

const patterns: ReadonlyArray<[RegExp, (match: string, ...groups: string[]) => string]> = [
  // Authorization headers and bearer/basic credentials.
  [/\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}/gi, (_m, scheme: string) => `${scheme} ${MASK}`],
  // Well-known key shapes: OpenAI, GitHub, Slack, AWS, JWTs.
  [/\bsk-[A-Za-z0-9_-]{8,}/g, () => MASK],
  [/\b(gh[pousr]|github_pat)_[A-Za-z0-9_]{10,}/g, () => MASK],
  [/\bxox[abprs]-[A-Za-z0-9-]{8,}/g, () => MASK],
  [/\bAKIA[0-9A-Z]{16}\b/g, () => MASK],
  [/\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g, () => MASK],
  // Credentials inside URLs: scheme://user:password@host
  [/([a-z][a-z0-9+.-]*:\/\/[^\s/:@]+:)[^\s/@]+@/gi, (_m, prefix: string) => `${prefix}${MASK}@`],
  // URL query parameters with secret-looking names.
  [
    /([?&](?:[^=&\s#]*(?:pass|secret|token|key|sig|auth|credential|session)[^=&\s#]*)=)[^&\s#]+/gi,
    (_m, prefix: string) => `${prefix}${MASK}`,
  ],
  // Environment-style assignments and key: value pairs with secret-looking names.
  [
    /\b([A-Za-z0-9_.-]*(?:PASS(?:WORD)?|SECRET|TOKEN|API_?KEY|APIKEY|AUTH|CREDENTIALS?|PRIVATE_?KEY)[A-Za-z0-9_]*\s*[=:]\s*)(?!(?:bearer|basic|token)\s|\*\*\*)("[^"]*"|'[^']*'|[^\s"',;&]+)/gi,
    (_m, prefix: string) => `${prefix}${MASK}`,
  ],
  // PEM private key blocks.
  [/-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----/g, () => MASK],
];

export function maskString(text: string): string {
  let out = text;
  for (const [pattern, replace] of patterns) out = out.replace(pattern, replace);
  return out;
}

/** Deep copy with secret-named fields replaced and secret-looking text masked. */
export function maskValue(value: unknown): unknown {
  if (typeof value === 'string') return maskString(value);
  if (Array.isArray(value)) return value.map(maskValue);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) {
      out[key] = SECRET_KEY.test(key) && inner !== null && inner !== undefined && typeof inner !== 'boolean' ? MASK : maskValue(inner);
    }
    return out;
  }
  return value;
}

/** Shortens long text for summaries; the cut is marked. */
export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… (${text.length - max} more characters)`;
}

/** A short, masked, one-line view of a call's arguments for audit and reviewers. */
export function summarizeArgs(args: unknown, max = 300): string {
  return truncate(JSON.stringify(maskValue(args)) ?? '', max);
}
