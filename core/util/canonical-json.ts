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
  if (value === null || typeof value === 'boolean') return JSON.stringify(value);
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new TypeError('canonicalJson: numbers must be finite');
    return JSON.stringify(value);
  }
  if (typeof value === 'string') return JSON.stringify(value);
  if (Array.isArray(value)) return `[${value.map((v) => (v === undefined ? 'null' : canonicalJson(v))).join(',')}]`;
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  throw new TypeError(`canonicalJson: cannot encode ${typeof value}`);
}
