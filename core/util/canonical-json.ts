/**
 * core/util/ — Small pure helpers every concept may use: canonical JSON,
 * SHA-256 in plain TypeScript, globs, POSIX path arithmetic, durations, IP
 * address classes and the base error classes. Nothing here knows of jobs,
 * rules or tools.
 *
 * May import: nothing else in core/.
 */

/**
 * Canonical JSON: object keys sorted, no whitespace, `undefined` fields
 * dropped. The same value always gives the same text, so hashes of it are
 * stable across processes and runs.
 */
export function canonicalJson(value: unknown): string {
  const out: string[] = [];
  write(value, out);
  // One join at the end: joining at every level would copy a megabyte string once per level it is nested in.
  return out.join('');
}

function write(value: unknown, out: string[]): void {
  if (value === null || typeof value === 'boolean' || typeof value === 'string') {
    out.push(JSON.stringify(value));
    return;
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('canonicalJson: numbers must be finite');
    out.push(JSON.stringify(value));
    return;
  }
  if (Array.isArray(value)) {
    out.push('[');
    // By index, so a hole is `null` as in JSON.stringify.
    for (let i = 0; i < value.length; i++) {
      const v: unknown = value[i];
      if (i > 0) out.push(',');
      if (v === undefined) out.push('null');
      else write(v, out);
    }
    out.push(']');
    return;
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    out.push('{');
    entries.forEach(([k, v], i) => {
      if (i > 0) out.push(',');
      out.push(JSON.stringify(k), ':');
      write(v, out);
    });
    out.push('}');
    return;
  }
  throw new TypeError(`canonicalJson: cannot encode ${typeof value}`);
}
