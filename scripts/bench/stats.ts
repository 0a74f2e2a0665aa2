import { performance } from 'node:perf_hooks';
import { percentile } from '../../core/policy/judge-eval';

/** Median and p95 of a sample; NaN for an empty one, so a missing figure never looks like a fast one. */
export function summary(values: readonly number[]): { median: number; p95: number; n: number } {
  return { median: percentile(values, 50) ?? Number.NaN, p95: percentile(values, 95) ?? Number.NaN, n: values.length };
}

/** A figure's median (as its value), p95 and count from a sample; `scale` converts the unit (1 / 1000: ms to s). */
export function sampled(values: readonly number[], scale = 1): { value: number; p95: number; n: number } {
  const s = summary(values);
  return { value: s.median * scale, p95: s.p95 * scale, n: s.n };
}

/** Ratios of paired runs (same round), so drift on a noisy machine hits both sides alike. */
export function pairedRatios(numerators: readonly number[], denominators: readonly number[]): number[] {
  const out: number[] = [];
  for (let i = 0; i < Math.min(numerators.length, denominators.length); i++) {
    const num = numerators[i];
    const den = denominators[i];
    if (num !== undefined && den !== undefined && den > 0) out.push(num / den);
  }
  return out;
}

/** Milliseconds an async step took. */
export async function timed<T>(run: () => Promise<T>): Promise<{ ms: number; value: T }> {
  const t0 = performance.now();
  const value = await run();
  return { ms: performance.now() - t0, value };
}

/**
 * Runs every variant once per round, each round in a rotated order, so no
 * variant always runs first (after idle) or last (after load). Returns the
 * samples of each variant, in the order of `variants`.
 */
export async function interleaved<T>(variants: readonly T[], rounds: number, run: (variant: T, round: number) => Promise<number>): Promise<number[][]> {
  const samples: number[][] = variants.map(() => []);
  for (let round = 0; round < rounds; round++) {
    for (let i = 0; i < variants.length; i++) {
      const index = (i + round) % variants.length;
      const variant = variants[index];
      if (variant !== undefined) samples[index]?.push(await run(variant, round));
    }
  }
  return samples;
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));
