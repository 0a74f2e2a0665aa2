import { z } from 'zod';
import { conditionMatches } from './conditions';
import { detect, defaultDeniedCommands } from './detectors';
import { conditionSchema } from './rules';
import { toolCategories } from '../tools/registry';

/**
 * A labelled set for `airlock judge eval`: each case pairs one call with one
 * judged rule and the expected answer.
 */
export const judgeEvalSetSchema = z.strictObject({
  version: z.literal(1),
  description: z.string().optional(),
  cases: z
    .array(
      z.strictObject({
        id: z.string().min(1),
        rule: z.strictObject({
          id: z.string().min(1),
          condition: z.string().min(1),
          scope: z
            .strictObject({ tools: z.array(z.string()).optional(), categories: z.array(z.enum(toolCategories)).optional() })
            .default({}),
          when: conditionSchema.optional(),
        }),
        call: z.strictObject({
          tool: z.string().min(1),
          category: z.enum(toolCategories),
          arguments: z.record(z.string(), z.unknown()),
        }),
        expected: z.enum(['match', 'no_match']),
        note: z.string().optional(),
      }),
    )
    .min(1),
});
export type JudgeEvalSet = z.output<typeof judgeEvalSetSchema>;
export type JudgeEvalCase = JudgeEvalSet['cases'][number];

/** Whether the deterministic prefilter would send this case to the judge at all. */
export function routedToJudge(c: JudgeEvalCase): boolean {
  const { scope, when } = c.rule;
  if (scope.tools !== undefined && !scope.tools.includes(c.call.tool)) return false;
  if (scope.categories !== undefined && !scope.categories.includes(c.call.category)) return false;
  if (when === undefined) return true;
  const targets = ['path', 'from', 'to'].map((k) => c.call.arguments[k]).filter((v): v is string => typeof v === 'string');
  return conditionMatches(when, c.call.arguments, (name) =>
    detect(name, {
      toolName: c.call.tool,
      category: c.call.category,
      args: c.call.arguments,
      targets,
      settings: { roots: [], allowedHosts: [], deniedCommands: defaultDeniedCommands },
    }),
  );
}

export type EvalPrediction = 'match' | 'no_match' | 'unknown' | 'failed' | 'not_routed';

export interface EvalOutcome {
  readonly caseId: string;
  readonly expected: 'match' | 'no_match';
  readonly predicted: EvalPrediction;
  /** Judge latency; undefined when the case was not routed. */
  readonly latencyMs?: number;
}

export interface EvalReport {
  readonly cases: number;
  readonly routed: number;
  /** Share of cases the deterministic prefilter sends to the judge. */
  readonly routingRate: number;
  /** Of `match` answers, how many were right; null without any `match` answer. */
  readonly precision: number | null;
  /** Of expected matches, how many the whole pipeline caught (unrouted ones count as missed). */
  readonly recall: number | null;
  /** Share of judged cases answered `unknown` or not at all. */
  readonly unknownRate: number | null;
  readonly latencyP50Ms: number | null;
  readonly latencyP95Ms: number | null;
  readonly confusion: { readonly truePositive: number; readonly falsePositive: number; readonly falseNegative: number; readonly trueNegative: number };
}

export function percentile(values: readonly number[], p: number): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

export function evalReport(outcomes: readonly EvalOutcome[]): EvalReport {
  const routed = outcomes.filter((o) => o.predicted !== 'not_routed');
  const count = (f: (o: EvalOutcome) => boolean) => outcomes.filter(f).length;
  const tp = count((o) => o.expected === 'match' && o.predicted === 'match');
  const fp = count((o) => o.expected === 'no_match' && o.predicted === 'match');
  const fn = count((o) => o.expected === 'match' && o.predicted !== 'match');
  const tn = count((o) => o.expected === 'no_match' && o.predicted !== 'match');
  const unclear = routed.filter((o) => o.predicted === 'unknown' || o.predicted === 'failed').length;
  const latencies = routed.flatMap((o) => (o.latencyMs === undefined ? [] : [o.latencyMs]));
  return {
    cases: outcomes.length,
    routed: routed.length,
    routingRate: outcomes.length === 0 ? 0 : routed.length / outcomes.length,
    precision: tp + fp === 0 ? null : tp / (tp + fp),
    recall: tp + fn === 0 ? null : tp / (tp + fn),
    unknownRate: routed.length === 0 ? null : unclear / routed.length,
    latencyP50Ms: percentile(latencies, 50),
    latencyP95Ms: percentile(latencies, 95),
    confusion: { truePositive: tp, falsePositive: fp, falseNegative: fn, trueNegative: tn },
  };
}
