import { isSecretField, MASK, maskString } from '../../core/redaction/masking';

/** Headers whose value is a credential whatever it looks like. */
const CREDENTIAL_HEADERS = new Set(['authorization', 'proxy-authorization', 'cookie', 'set-cookie']);

const SCHEMES = /^(bearer|basic|digest|token|negotiate|ntlm|aws4-hmac-sha256)$/i;

/** Secrets shorter than this are not searched for in other text (they would shred it); their headers are still masked. */
const MIN_SEARCHED = 4;

export function isSecretHeader(name: string, value: string): boolean {
  const lower = name.toLowerCase();
  return CREDENTIAL_HEADERS.has(lower) || isSecretField(lower, value) || maskString(value) !== value;
}

/**
 * Masks what a request carried as secrets wherever it shows up again: the
 * exact header values (an echo server puts them in the body), their
 * credential parts, and whatever looks like a secret (core/redaction/masking).
 */
export class Redactor {
  private readonly secrets: readonly string[];

  constructor(headers: Readonly<Record<string, string>>) {
    const found = new Set<string>();
    for (const [name, value] of Object.entries(headers)) {
      if (!isSecretHeader(name, value)) continue;
      found.add(value.trim());
      // "Bearer abc…": the credential alone; "a=1; b=2": each cookie's value too.
      for (const part of value.split(/[\s;,]+/)) {
        if (!SCHEMES.test(part)) found.add(part);
        const eq = part.indexOf('=');
        if (eq > 0) found.add(part.slice(eq + 1));
      }
    }
    // Longest first, so a value is masked whole before its parts.
    this.secrets = [...found].filter((s) => s.length >= MIN_SEARCHED).sort((a, b) => b.length - a.length);
  }

  text(text: string): string {
    let out = text;
    for (const secret of this.secrets) out = out.split(secret).join(MASK);
    return maskString(out);
  }

  /** Header values shown to anyone: credential headers masked whole, the rest redacted. */
  headers(headers: Readonly<Record<string, string | readonly string[] | undefined>>): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [name, raw] of Object.entries(headers)) {
      if (raw === undefined) continue;
      const value = typeof raw === 'string' ? raw : raw.join(', ');
      out[name] = isSecretHeader(name, value) ? MASK : this.text(value);
    }
    return out;
  }
}
