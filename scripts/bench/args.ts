import { parseArgs } from 'node:util';

export const partNames = ['policy', 'masking', 'floor', 'gate', 'services', 'http', 'history', 'approval', 'stores', 'cli', 'throughput', 'parked'] as const;
export type PartName = (typeof partNames)[number];

export interface BenchOptions {
  readonly only: readonly PartName[];
  readonly json: string;
  /** Parked jobs for `parked`. */
  readonly parked: number;
  /** Workflows of each kind timed by `floor`. */
  readonly floorRounds: number;
  /** Interleaved rounds for `gate` and `http`. */
  readonly gateRounds: number;
  /** Approvals timed by `approval`. */
  readonly approvals: number;
  /** Interleaved rounds for `cli`. */
  readonly cliRounds: number;
  /** Policy evaluations per rule count. */
  readonly policyIterations: number;
  /** Jobs started together by `throughput`. */
  readonly throughputJobs: number;
  /** Allowed calls (one per model turn) of each `throughput` job. */
  readonly throughputCalls: number;
  /** Rounds of `throughput`, each side once per round. */
  readonly throughputRounds: number;
}

export const usage = `usage: npm run bench -- [--only PART,...] [--json FILE] [--parked N] [--floor-rounds N] [--gate-rounds N] [--approvals N] [--cli-rounds N] [--policy-iterations N] [--throughput-jobs N] [--throughput-calls N] [--throughput-rounds N]
parts: ${partNames.join(', ')} (default: all, in this order)`;

function isPartName(name: string): name is PartName {
  return partNames.some((p) => p === name);
}

function count(raw: string | undefined, flag: string, fallback: number): number {
  if (raw === undefined) return fallback;
  if (!/^[0-9]+$/.test(raw) || Number(raw) < 1) throw new Error(`${flag} takes a whole number of at least 1, got ${JSON.stringify(raw)}`);
  return Number(raw);
}

export function parseBenchArgs(argv: readonly string[]): BenchOptions | 'help' {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      only: { type: 'string' },
      json: { type: 'string' },
      parked: { type: 'string' },
      'floor-rounds': { type: 'string' },
      'gate-rounds': { type: 'string' },
      approvals: { type: 'string' },
      'cli-rounds': { type: 'string' },
      'policy-iterations': { type: 'string' },
      'throughput-jobs': { type: 'string' },
      'throughput-calls': { type: 'string' },
      'throughput-rounds': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help === true) return 'help';
  const wanted = values.only === undefined ? [...partNames] : values.only.split(',').map((s) => s.trim()).filter((s) => s !== '');
  const unknown = wanted.filter((name) => !isPartName(name));
  if (unknown.length > 0) throw new Error(`unknown part(s) ${unknown.join(', ')}; known: ${partNames.join(', ')}`);
  return {
    // Always in the suite's order: the heavy parked part last, so it cannot slow the others.
    only: partNames.filter((p) => wanted.includes(p)),
    json: values.json ?? 'bench-results.json',
    parked: count(values.parked, '--parked', 1000),
    floorRounds: count(values['floor-rounds'], '--floor-rounds', 5),
    gateRounds: count(values['gate-rounds'], '--gate-rounds', 15),
    approvals: count(values.approvals, '--approvals', 30),
    cliRounds: count(values['cli-rounds'], '--cli-rounds', 10),
    policyIterations: count(values['policy-iterations'], '--policy-iterations', 50_000),
    throughputJobs: count(values['throughput-jobs'], '--throughput-jobs', 100),
    throughputCalls: count(values['throughput-calls'], '--throughput-calls', 10),
    throughputRounds: count(values['throughput-rounds'], '--throughput-rounds', 3),
  };
}
