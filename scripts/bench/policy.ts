import { createHash } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { callFingerprint, fingerprintText, type FingerprintInput } from '../../core/approval/fingerprint';
import { benchPolicy } from '../bench-policy';
import type { BenchOptions } from './args';
import type { Figure } from './figures';
import { pairedRatios, sampled } from './stats';

/**
 * Deterministic policy decisions per second and latency per decision at 0,
 * 10 and 200 rules (`scripts/bench-policy.ts`); and the fingerprint of a
 * megabyte write, which workflow code and policy compute with SHA-256 in
 * plain TypeScript, beside `node:crypto` hashing the same text.
 */
export function policyPart(options: BenchOptions): Figure[] {
  const figures: Figure[] = [];
  for (const rules of [0, 10, 200]) {
    const r = benchPolicy(rules, options.policyIterations);
    figures.push({ part: 'policy', name: `${rules} rules: decisions per second`, unit: '1/s', value: r.perSecond, n: options.policyIterations });
    figures.push({
      part: 'policy',
      name: `${rules} rules: latency per decision`,
      unit: 'us',
      value: r.p50us,
      p95: r.p95us,
      p99: r.p99us,
      n: options.policyIterations,
      note: Object.entries(r.decided).map(([k, v]) => `${k} ${v}`).join(', '),
    });
  }
  return [...figures, ...fingerprintFigures(30)];
}

function fingerprintFigures(rounds: number): Figure[] {
  // A megabyte of mixed text (ASCII and multi-byte characters), as a model's fs_write might carry.
  const line = 'line of a config file: väl = "日本語" # ok\n';
  const content = line.repeat(Math.ceil((1 << 20) / line.length)).slice(0, 1 << 20);
  const input: FingerprintInput = { jobId: 'bench', scope: {}, toolName: 'fs_write', normalizedArgs: { path: 'big.txt', content }, ruleId: null, ruleVersion: null };
  const native = () => createHash('sha256').update(fingerprintText(input)).digest('hex');
  if (callFingerprint(input) !== native()) throw new Error('policy: the plain-TypeScript fingerprint differs from node:crypto over the same text');
  const ours: number[] = [];
  const theirs: number[] = [];
  // Two warm-up rounds do not count.
  for (let i = -2; i < rounds; i++) {
    const t0 = performance.now();
    callFingerprint(input);
    const t1 = performance.now();
    native();
    const t2 = performance.now();
    if (i >= 0) {
      ours.push(t1 - t0);
      theirs.push(t2 - t1);
    }
  }
  return [
    { part: 'policy', name: 'call fingerprint, 1 MiB write (plain TypeScript)', unit: 'ms', ...sampled(ours), note: 'canonical JSON + SHA-256, as workflows hash' },
    { part: 'policy', name: 'the same text through node:crypto', unit: 'ms', ...sampled(theirs), note: 'canonical JSON + native SHA-256' },
    { part: 'policy', name: 'fingerprint: plain TypeScript / node:crypto', unit: 'ratio', ...sampled(pairedRatios(ours, theirs)), note: 'paired per round' },
  ];
}
