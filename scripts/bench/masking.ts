import { maskPreview, maskString, maskValue, summarizeArgs } from '../../core/redaction/masking';
import { fill, maskingShapes, MB } from '../../test/helpers/masking-shapes';
import type { Figure } from './figures';

/**
 * How long masking takes: the figures `test/unit/masking.test.ts`
 * does not assert (it asserts only ratios: linear growth, maskValue against
 * its strings, summaries against the size of the text).
 */

/** Text shapes that make naive secret patterns backtrack, a megabyte each (the rows of earlier runs). */
const shapes: ReadonlyArray<readonly [string, string]> = [
  ['repeated hex', '0123456789abcdef'],
  ['URL with many ":" and "@"', 'x://a:b@c:d@'],
  ['key=key=…', 'key='],
  ['query pairs', '?apikey=x&'],
  ['PEM headers without footer', '-----BEGIN RSA PRIVATE KEY-----'],
  ['JWT parts', 'eyJabcdefgh.'],
  ['mixture', 'https://u:p@h/?token=x&key=key=-----BEGIN eyJabc. Bearer sk-ghp_ AKIA 映 '],
];

/** Every shape masking.test.ts holds to linear time, built to a length. */
const testShapes = maskingShapes;

const ROUNDS = 3;

function msOf(run: () => void): number {
  const t0 = performance.now();
  run();
  return performance.now() - t0;
}

/** Best of a few runs: the figure is about the code, not a busy moment of the machine. */
function best(run: () => void, rounds = ROUNDS): number {
  let fastest = Infinity;
  for (let i = 0; i < rounds; i++) fastest = Math.min(fastest, msOf(run));
  return fastest;
}

/** One text of `size` against `pieces` texts of the same shape, each `1 / pieces` as long: about 1 when linear. */
function growth(build: (size: number) => string, size: number, pieces: number): number {
  const whole = build(size);
  const parts = Array.from({ length: pieces }, () => build(size / pieces));
  let wholeMs = Infinity;
  let partsMs = Infinity;
  for (let i = 0; i < ROUNDS; i++) {
    partsMs = Math.min(
      partsMs,
      msOf(() => {
        for (const part of parts) maskString(part);
      }),
    );
    wholeMs = Math.min(wholeMs, msOf(() => maskString(whole)));
  }
  return wholeMs / partsMs;
}

export function maskingPart(): Figure[] {
  const figures: Figure[] = [];
  const add = (name: string, unit: string, value: number, note: string) => figures.push({ part: 'masking', name, unit, value, n: ROUNDS, note });
  maskString(fill('0123456789abcdef', 4096));

  for (const [name, unit] of shapes) {
    const text = unit.repeat(Math.ceil(MB / unit.length)).slice(0, MB);
    maskString(text.slice(0, 4096));
    add(`1 MiB of ${name}`, 'ms', best(() => maskString(text)), 'best of 3');
  }

  // The test's shapes: the slowest megabyte, and how far from linear the worst one grows.
  let slowest = { name: '', ms: -Infinity };
  let steepest = { name: '', ratio: -Infinity };
  for (const [name, build] of testShapes) {
    const text = build(MB);
    const ms = best(() => maskString(text));
    if (ms > slowest.ms) slowest = { name, ms };
    const ratio = growth(build, MB, 64);
    if (ratio > steepest.ratio) steepest = { name, ratio };
  }
  add(`1 MiB, slowest of masking.test.ts's ${testShapes.length} shapes`, 'ms', slowest.ms, `${slowest.name}; best of 3`);
  add('1 MiB whole / 64 x 16 KiB, largest of those shapes', 'ratio', steepest.ratio, `${steepest.name}; 1 when linear, 64 when quadratic`);

  // A tool call's arguments: two megabyte strings, one nested.
  const value = { path: 'a.txt', content: fill('0123456789abcdef', MB), nested: [{ note: fill('x://a:b@c:d@', MB) }] };
  add('maskValue, two 1 MiB strings in a value', 'ms', best(() => maskValue(value)), 'best of 3');

  // Summaries mask only what they show: per call, on 8 MiB.
  const huge = fill('0123456789abcdef', 8 * MB);
  const calls = 200;
  const perCallUs = (run: () => void) => {
    const ms = best(() => {
      for (let i = 0; i < calls; i++) run();
    });
    return (ms * 1000) / calls;
  };
  add('summarizeArgs of 8 MiB, per call', 'us', perCallUs(() => summarizeArgs({ path: 'a.txt', content: huge })), `best of 3 runs of ${calls} calls`);
  add('maskPreview of 8 MiB (2,000 shown), per call', 'us', perCallUs(() => maskPreview(huge, 2000)), `best of 3 runs of ${calls} calls`);
  return figures;
}
