import { benchPolicy } from '../bench-policy';
import type { BenchOptions } from './args';
import type { Figure } from './figures';

/** Deterministic policy decisions per second and latency per decision at 0, 10 and 200 rules (`scripts/bench-policy.ts`). */
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
  return figures;
}
