import { COMPLETE_TOOL, sideEffectToolNames } from '../../core/tools/registry';
import type { ReplayScript } from '../../core/model/replay-script';
import type { BenchOptions } from './args';
import type { Figure } from './figures';
import { completed, readBatch, readTurns, startJob } from './jobs';
import { PLAIN_WORKFLOW, type PlainAgentInput } from './plain-workflow';
import { PLAIN_TASK_QUEUE } from './plain-worker';
import type { RulePreset } from './rules';
import type { Stack } from './stack';
import { interleaved, pairedRatios, summary, timed } from './stats';

/**
 * Gate overhead: the same replayed model turns and the same reads as an
 * airlock job (built-in rules, and no rules) and as a plain workflow,
 * timed from start to result, interleaved round by round.
 */

const TURNS = 5;
const BATCH = 10;

const shapes = {
  turns: { label: `${TURNS} turns x 1 read`, script: readTurns(TURNS, (i) => `f${i}.txt`) },
  batch: { label: `1 turn x ${BATCH} reads`, script: readBatch(Array.from({ length: BATCH }, (_, i) => `f${i}.txt`)) },
} satisfies Record<string, { label: string; script: ReplayScript }>;
const shapeNames = ['turns', 'batch'] as const;
type Shape = (typeof shapeNames)[number];

const kinds = ['plain', 'builtIn', 'none'] as const;
type Kind = (typeof kinds)[number];
const kindLabel: Record<Kind, string> = { plain: 'plain workflow', builtIn: 'airlock, built-in rules', none: 'airlock, rules: []' };

interface Variant {
  readonly shape: Shape;
  readonly kind: Kind;
}

async function runOnce(stack: Stack, { shape, kind }: Variant, id: string): Promise<number> {
  stack.replay.setScript(shapes[shape].script);
  if (kind === 'plain') {
    const input: PlainAgentInput = { goal: `bench ${id}`, toolNames: [...sideEffectToolNames, COMPLETE_TOOL], maxTurns: 30 };
    const { ms } = await timed(() => stack.client.workflow.execute(PLAIN_WORKFLOW, { taskQueue: PLAIN_TASK_QUEUE, workflowId: id, args: [input] }));
    return ms;
  }
  const preset: RulePreset = kind;
  stack.useRules(preset);
  const { ms } = await timed(async () => {
    await startJob(stack.client, id);
    await completed(stack.client, id);
  });
  return ms;
}

export async function gatePart(stack: Stack, options: BenchOptions): Promise<Figure[]> {
  const variants: Variant[] = shapeNames.flatMap((shape) => kinds.map((kind) => ({ shape, kind })));
  const id = (v: Variant, tag: string) => `gate-${v.shape}-${v.kind}-${tag}`;
  // One warm-up round: bundles, caches and connections settle before anything counts.
  await interleaved(variants, 1, (v, round) => runOnce(stack, v, id(v, `warm${round}`)));
  const samples = await interleaved(variants, options.gateRounds, (v, round) => runOnce(stack, v, id(v, String(round))));
  const of = (shape: Shape, kind: Kind) => samples[variants.findIndex((v) => v.shape === shape && v.kind === kind)] ?? [];

  const figures: Figure[] = [];
  for (const shape of shapeNames) {
    for (const kind of kinds) {
      const s = summary(of(shape, kind));
      figures.push({ part: 'gate', name: `${shapes[shape].label}: ${kindLabel[kind]}`, unit: 'ms', value: s.median, p95: s.p95, n: s.n, note: 'start to result' });
    }
    for (const kind of ['builtIn', 'none'] as const) {
      const s = summary(pairedRatios(of(shape, kind), of(shape, 'plain')));
      figures.push({ part: 'gate', name: `${shapes[shape].label}: ${kindLabel[kind]} / plain`, unit: 'ratio', value: s.median, p95: s.p95, n: s.n, note: 'paired per round' });
    }
  }
  return figures;
}
