import { availableParallelism, loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { parseRulesDocument } from '../host/config/rules-file';
import { evaluateCall } from '../core/policy/evaluate';
import { type CallContext } from '../core/policy/call-evaluation';
import type { Condition, RuleAction, RuleInput } from '../core/policy/rules';
import { buildSnapshot, type PolicySnapshot } from '../core/policy/snapshot';

/**
 * Deterministic policy decisions per second and latency per decision for
 * 0, 10 and 200 rules: `npm run bench:policy`. Figures, not assertions.
 *
 * The rule set is shaped like a grown rules file: of every 20 rules, 11 are
 * scoped to a tool and 5 to categories (nearly all with a `when`), 2 apply
 * to every call, 1 is judged and 1 is scoped to a movement. Calls cycle
 * through the seven file tools; every fourth runs in that movement.
 * `npm run bench` imports `benchPolicy` for its `policy` part.
 */
const tools = [
  { toolName: 'fs_list', category: 'read' },
  { toolName: 'fs_read', category: 'read' },
  { toolName: 'fs_stat', category: 'read' },
  { toolName: 'fs_write', category: 'file_change' },
  { toolName: 'fs_move', category: 'file_change' },
  { toolName: 'fs_delete', category: 'delete' },
  { toolName: 'fs_chmod', category: 'file_change' },
] as const;

type Kind = 'tool' | 'category' | 'unscoped' | 'judged' | 'movement';
const mix: readonly Kind[] = [
  'tool', 'tool', 'category', 'tool', 'unscoped', 'tool', 'category', 'tool', 'judged', 'tool',
  'category', 'tool', 'tool', 'category', 'unscoped', 'tool', 'category', 'tool', 'movement', 'tool',
];
const categoryScopes = [['read'], ['file_change'], ['delete'], ['file_change', 'delete']] as const;
const actions: readonly RuleAction[] = ['audit_only', 'audit_only', 'inject_instruction', 'request_approval', 'notify_admin', 'deny_current_tool', 'inject_instruction', 'audit_only'];

function when(i: number, toolName: string): Condition {
  if (toolName === 'fs_chmod' && i % 2 === 0) return { any: [{ arg: 'mode', in: ['777', '666', '0777'] }, { detector: 'world_writable' }] };
  const variants: Condition[] = [
    { arg: 'path', glob: `**/dir${i % 17}/*.{conf,yaml}` },
    { arg: 'path', regex: `^/srv/(media|backup)/${i % 13}/` },
    { any: [{ arg: 'recursive', equals: true }, { detector: 'outside_roots' }] },
    { all: [{ arg: 'path', glob: `**/dir${i % 17}/*.${['tmp', 'bak', 'swp', 'part'][i % 4]}` }, { not: { arg: 'path', regex: '^/srv/media/' } }] },
    { detector: 'destroys_data' },
    { arg: 'options.dryRun', exists: true },
  ];
  return variants[i % variants.length]!;
}

function rules(count: number): RuleInput[] {
  const out: RuleInput[] = [];
  for (let i = 0; i < count; i++) {
    const tool = tools[i % tools.length]!;
    const base = { id: `rule-${i}`, version: 1, name: `rule ${i}` };
    const action = actions[i % actions.length]!;
    const instruction = action === 'inject_instruction' || action === 'deny_current_tool' ? { instruction: `Instruction ${i}.` } : {};
    switch (mix[i % mix.length]!) {
      case 'tool':
        out.push({ ...base, scope: { tools: [tool.toolName] }, when: when(i, tool.toolName), action, ...instruction });
        break;
      case 'category':
        out.push({ ...base, scope: { categories: [...categoryScopes[i % categoryScopes.length]!] }, when: when(i, ''), action, ...instruction });
        break;
      case 'unscoped':
        out.push(
          i % 3 === 0
            ? { ...base, when: { detector: 'outside_roots' }, action: 'deny_current_tool', instruction: 'Stay inside the roots.' }
            : { ...base, when: { arg: 'path', glob: `**/secret${i}{,/**}` }, action: 'request_approval' },
        );
        break;
      case 'judged':
        out.push({
          ...base,
          scope: { tools: [tool.toolName] },
          ...(i % 2 === 0 ? { when: { arg: 'path', regex: '^/srv/backup/' } } : {}),
          condition: 'removes or exposes something irreplaceable',
          action: 'request_approval',
          enforceJudge: i % 4 === 0,
        });
        break;
      case 'movement':
        out.push({ ...base, scope: { tools: [tool.toolName], movement: ['cleanup'] }, action: 'request_approval' });
        break;
    }
  }
  return out;
}

function calls(n: number): CallContext[] {
  const out: CallContext[] = [];
  for (let i = 0; i < n; i++) {
    const tool = tools[i % tools.length]!;
    const dir = i % 23 === 0 ? `secret${i % 200}` : `dir${i % 17}`;
    const path = `/srv/${i % 2 === 0 ? 'media' : 'backup'}/${i % 13}/${dir}/file${i}.${['conf', 'mkv', 'tmp', 'bak'][i % 4]}`;
    const args = argsFor(tool.toolName, path, i);
    const scope = i % 4 === 0 ? { piece: 'nightly', movement: 'cleanup' } : {};
    out.push({ ...tool, args, scope, targets: tool.toolName === 'fs_move' ? [path, `${path}.old`] : [path] });
  }
  return out;
}

function argsFor(toolName: string, path: string, i: number): Record<string, unknown> {
  switch (toolName) {
    case 'fs_read':
      return { path, maxBytes: 65_536 };
    case 'fs_write':
      return { path, content: 'x', mode: i % 5 === 0 ? 'overwrite' : 'create' };
    case 'fs_move':
      return { from: path, to: `${path}.old`, overwrite: i % 5 === 0 };
    case 'fs_delete':
      return { path, recursive: i % 5 === 0 };
    case 'fs_chmod':
      return { path, mode: i % 7 === 0 ? '777' : '640' };
    default:
      return { path };
  }
}

function percentile(sorted: Float64Array, p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)] ?? 0;
}

function snapshotOf(ruleCount: number): PolicySnapshot {
  // Through text, as a worker reads its rules file: strings are then parsed ones, not built ones.
  const document: unknown = JSON.parse(JSON.stringify({ version: 1, rules: rules(ruleCount) }));
  return buildSnapshot(parseRulesDocument(document, 'bench'), 'bench', {
    roots: ['/srv/media', '/srv/backup'],
    judgeModel: 'none',
    judgeTimeoutMs: 1000,
  });
}

export interface PolicyBenchResult {
  readonly perSecond: number;
  readonly p50us: number;
  readonly p95us: number;
  readonly p99us: number;
  /** The first decision on a snapshot object not seen before, as an activity gets it. */
  readonly coldUs: number;
  readonly decided: Record<string, number>;
}

export function benchPolicy(ruleCount: number, iterations: number): PolicyBenchResult {
  const snapshot = snapshotOf(ruleCount);
  const inputs = calls(1000);
  for (let i = 0; i < 20_000; i++) evaluateCall(snapshot, 'tool.before', inputs[i % inputs.length]!, {}, 0);
  const samples = new Float64Array(iterations);
  const decided: Record<string, number> = {};
  const started = performance.now();
  for (let i = 0; i < iterations; i++) {
    const t0 = performance.now();
    const result = evaluateCall(snapshot, 'tool.before', inputs[i % inputs.length]!, {}, 0);
    samples[i] = performance.now() - t0;
    const key = result.judgeCandidates.length > 0 ? `${result.decision}+judge` : result.decision;
    decided[key] = (decided[key] ?? 0) + 1;
  }
  const elapsed = performance.now() - started;
  samples.sort();
  // Each activity call decodes its own copy of the snapshot from a JSON payload.
  const text = JSON.stringify(snapshot);
  const copies = Array.from({ length: 200 }, () => JSON.parse(text) as PolicySnapshot);
  const cold = new Float64Array(copies.length);
  copies.forEach((copy, i) => {
    const t0 = performance.now();
    evaluateCall(copy, 'tool.before', inputs[i]!, {}, 0);
    cold[i] = performance.now() - t0;
  });
  cold.sort();
  return {
    perSecond: Math.round((iterations / elapsed) * 1000),
    p50us: percentile(samples, 50) * 1000,
    p95us: percentile(samples, 95) * 1000,
    p99us: percentile(samples, 99) * 1000,
    coldUs: percentile(cold, 50) * 1000,
    decided,
  };
}

function main(): void {
  const iterations = Number(process.env.BENCH_ITERATIONS ?? 50_000);
  // Latency tails follow what else the machine runs: the load is printed with the figures.
  process.stdout.write(
    `deterministic policy evaluation, ${iterations} calls per row after 20000 warm-up calls (node ${process.version}, load ${loadavg()[0]!.toFixed(1)} on ${availableParallelism()} cpus)\n`,
  );
  process.stdout.write('  rules  decisions/s   p50 µs   p99 µs  vs 0 rules  cold p50 µs  decisions\n');
  let baseline = 0;
  for (const count of [0, 10, 200]) {
    const r = benchPolicy(count, iterations);
    if (count === 0) baseline = r.perSecond;
    process.stdout.write(
      `  ${String(count).padStart(5)}  ${String(r.perSecond).padStart(11)}  ${r.p50us.toFixed(1).padStart(7)}  ${r.p99us.toFixed(1).padStart(7)}  ${(baseline / r.perSecond).toFixed(1).padStart(9)}x  ${r.coldUs.toFixed(1).padStart(11)}  ${JSON.stringify(r.decided)}\n`,
    );
  }
}

if (require.main === module) main();
