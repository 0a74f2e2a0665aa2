import { maskString } from '../../core/redaction/masking';
import type { Figure } from './figures';

const MB = 1 << 20;

/** Text shapes that make naive secret patterns backtrack, a megabyte each. */
const shapes: ReadonlyArray<readonly [string, string]> = [
  ['repeated hex', '0123456789abcdef'],
  ['URL with many ":" and "@"', 'x://a:b@c:d@'],
  ['key=key=…', 'key='],
  ['query pairs', '?apikey=x&'],
  ['PEM headers without footer', '-----BEGIN RSA PRIVATE KEY-----'],
  ['JWT parts', 'eyJabcdefgh.'],
  ['mixture', 'https://u:p@h/?token=x&key=key=-----BEGIN eyJabc. Bearer sk-ghp_ AKIA 映 '],
];

/** Milliseconds to mask a megabyte of model text, best of three per shape. */
export function maskingPart(): Figure[] {
  return shapes.map(([name, unit]) => {
    const text = unit.repeat(Math.ceil(MB / unit.length)).slice(0, MB);
    maskString(text.slice(0, 4096));
    let best = Infinity;
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      maskString(text);
      best = Math.min(best, performance.now() - t0);
    }
    return { part: 'masking', name: `1 MiB of ${name}`, unit: 'ms', value: best, n: 3, note: 'best of 3' };
  });
}
