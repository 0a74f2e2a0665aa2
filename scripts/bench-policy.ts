import { performance } from 'node:perf_hooks';
import { parseRulesDocument } from '../host/rules-file';
import { evaluateCall, type CallContext } from '../core/policy/evaluate';
import type { RuleInput } from '../core/policy/rules';
import { buildSnapshot } from '../core/policy/snapshot';
import { percentile } from '../core/judge-eval';

/**
 * Deterministic policy decisions per second and latency per decision for
 * 0, 10 and 200 rules: `npm run bench:policy`. Figures, not assertions.
 * `npm run bench` imports `benchPolicy` for its `policy` part.
 */
const tools = [
  { toolName: 'fs_read', category: 'read' },
  { toolName: 'fs_write', category: 'file_change' },
  { toolName: 'fs_delete', category: 'delete' },
  { toolName: 'fs_chmod', category: 'file_change' },
  { toolName: 'fs_move', category: 'file_change' },
] as const;

function rules(count: number): RuleInput[] {
  const out: RuleInput[] = [];
  for (let i = 0; i < count; i++) {
    const tool = tools[i % tools.length]!;
    const when = [
      { arg: 'path', glob: `**/dir${i % 17}/*.{conf,yaml}` },
      { arg: 'path', regex: `^/srv/(media|backup)/${i % 13}` },
      { any: [{ arg: 'recursive', equals: true }, { detector: 'outside_roots' as const }] },
      { not: { arg: 'path', glob: '**/*.tmp' } },
    ][i % 4];
    const action = (['audit_only', 'inject_instruction', 'request_approval', 'deny_current_tool'] as const)[i % 4]!;
    out.push({
      id: `rule-${i}`,
      version: 1,
      name: `rule ${i}`,
      scope: i % 3 === 0 ? { categories: [tool.category] } : { tools: [tool.toolName] },
      when,
      action,
      ...(action === 'inject_instruction' || action === 'deny_current_tool' ? { instruction: `Instruction ${i}.` } : {}),
    });
  }
  return out;
}

function calls(n: number): CallContext[] {
  const out: CallContext[] = [];
  for (let i = 0; i < n; i++) {
    const tool = tools[i % tools.length]!;
    const path = `/srv/${i % 2 === 0 ? 'media' : 'backup'}/${i % 13}/dir${i % 17}/file${i}.${['conf', 'mkv', 'tmp'][i % 3]}`;
    const args = tool.toolName === 'fs_move' ? { from: path, to: `${path}.old`, overwrite: false } : { path, recursive: i % 5 === 0, mode: '640' };
    out.push({ ...tool, args, scope: {}, targets: [path] });
  }
  return out;
}

export interface PolicyBenchResult {
  readonly perSecond: number;
  readonly p50us: number;
  readonly p95us: number;
  readonly p99us: number;
  readonly decided: Record<string, number>;
}

export function benchPolicy(ruleCount: number, iterations: number): PolicyBenchResult {
  const snapshot = buildSnapshot(parseRulesDocument({ version: 1, rules: rules(ruleCount) }, 'bench'), 'bench', {
    roots: ['/srv/media', '/srv/backup'],
    judgeModel: 'none',
    judgeTimeoutMs: 1000,
  });
  const inputs = calls(1000);
  for (let i = 0; i < 2000; i++) evaluateCall(snapshot, 'tool.before', inputs[i % inputs.length]!, {}, 0);
  const samples: number[] = [];
  const decided: Record<string, number> = {};
  const started = performance.now();
  for (let i = 0; i < iterations; i++) {
    const t0 = performance.now();
    const result = evaluateCall(snapshot, 'tool.before', inputs[i % inputs.length]!, {}, 0);
    samples.push(performance.now() - t0);
    decided[result.decision] = (decided[result.decision] ?? 0) + 1;
  }
  const elapsed = performance.now() - started;
  return {
    perSecond: Math.round((iterations / elapsed) * 1000),
    p50us: (percentile(samples, 50) ?? 0) * 1000,
    p95us: (percentile(samples, 95) ?? 0) * 1000,
    p99us: (percentile(samples, 99) ?? 0) * 1000,
    decided,
  };
}

function main(): void {
  const iterations = Number(process.env.BENCH_ITERATIONS ?? 50_000);
  process.stdout.write(`deterministic policy evaluation, ${iterations} calls per row (node ${process.version})\n`);
  process.stdout.write('  rules  decisions/s   p50 µs   p99 µs  vs 0 rules  decisions\n');
  let baseline = 0;
  for (const count of [0, 10, 200]) {
    const r = benchPolicy(count, iterations);
    if (count === 0) baseline = r.perSecond;
    process.stdout.write(
      `  ${String(count).padStart(5)}  ${String(r.perSecond).padStart(11)}  ${r.p50us.toFixed(1).padStart(7)}  ${r.p99us.toFixed(1).padStart(7)}  ${(baseline / r.perSecond).toFixed(1).padStart(9)}x  ${JSON.stringify(r.decided)}\n`,
    );
  }
}

if (require.main === module) main();
