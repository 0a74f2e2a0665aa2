import { tsToMs } from '@temporalio/common/lib/time';
import { COMPLETE_TOOL, sideEffectToolNames } from '../../core/tools/registry';
import type { ReplayScript } from '../../core/model/replay-script';
import type { BenchOptions } from './args';
import type { Figure } from './figures';
import { splitHistory, type Split } from './floor';
import { completed, readBatch, readTurns, startJob } from './jobs';
import { PLAIN_WORKFLOW, type PlainAgentInput } from './plain-workflow';
import { PLAIN_TASK_QUEUE } from './plain-worker';
import type { RulePreset } from './rules';
import type { Stack } from './stack';
import { interleaved, pairedRatios, sampled, summary, timed } from './stats';

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

const phases = [
  ['activityHandOff', 'activity hand-offs'],
  ['activityRun', 'activities on the workers'],
  ['workflowTaskHandOff', 'workflow task hand-offs'],
  ['workflowTaskRun', 'workflow tasks on the worker'],
] as const satisfies ReadonlyArray<readonly [keyof Split, string]>;

/**
 * Where the difference between airlock and the plain workflow goes, for the
 * turns shape: each job's history split as the `floor` part splits it,
 * summed per job, airlock (built-in rules) minus plain, paired per round.
 * The first workflow task (the job's start, its policy snapshot) is its
 * own row; what the history's span leaves out is the client's start and
 * result.
 */
async function phaseFigures(stack: Stack, options: BenchOptions, id: (v: Variant, round: number) => string): Promise<Figure[]> {
  const sums = async (kind: Kind, round: number) => {
    const split: Split = { activityHandOff: [], activityRun: [], workflowTaskHandOff: [], workflowTaskRun: [] };
    const history = await stack.client.workflow.getHandle(id({ shape: 'turns', kind }, round)).fetchHistory();
    splitHistory(history, split);
    const total = (values: readonly number[]) => values.reduce((a, b) => a + b, 0);
    const events = history.events ?? [];
    const time = (index: number) => tsToMs(events.at(index)?.eventTime);
    return {
      split: Object.fromEntries(phases.map(([key]) => [key, total(split[key])])),
      workflowTasks: split.workflowTaskRun.length,
      // Started to the first workflow task completed: the job's start on the worker.
      firstTask: time(3) - time(0),
      span: time(-1) - time(0),
    };
  };
  const diffs: Record<string, number[]> = Object.fromEntries(phases.map(([key]) => [key, []]));
  const extraTasks: number[] = [];
  const firstTask: number[] = [];
  const span: number[] = [];
  for (let round = 0; round < options.gateRounds; round++) {
    const airlock = await sums('builtIn', round);
    const plain = await sums('plain', round);
    for (const [key] of phases) diffs[key]?.push((airlock.split[key] ?? 0) - (plain.split[key] ?? 0));
    extraTasks.push(airlock.workflowTasks - plain.workflowTasks);
    firstTask.push(airlock.firstTask - plain.firstTask);
    span.push(airlock.span - plain.span);
  }
  const label = `${shapes.turns.label}: airlock - plain`;
  return [
    ...phases.map(([key, name]): Figure => ({ part: 'gate', name: `${label}, ${name}`, unit: 'ms', ...sampled(diffs[key] ?? []), note: 'per job, from its history' })),
    { part: 'gate', name: `${label}, first workflow task`, unit: 'ms', ...sampled(firstTask), note: 'started to its completion' },
    { part: 'gate', name: `${label}, history start to close`, unit: 'ms', ...sampled(span), note: 'the rest of the wall time is the client' },
    { part: 'gate', name: `${label}, workflow tasks`, unit: 'tasks', value: summary(extraTasks).median, n: extraTasks.length, note: 'after the first' },
  ];
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
      figures.push({ part: 'gate', name: `${shapes[shape].label}: ${kindLabel[kind]}`, unit: 'ms', ...sampled(of(shape, kind)), note: 'start to result' });
    }
    for (const kind of ['builtIn', 'none'] as const) {
      figures.push({ part: 'gate', name: `${shapes[shape].label}: ${kindLabel[kind]} / plain`, unit: 'ratio', ...sampled(pairedRatios(of(shape, kind), of(shape, 'plain'))), note: 'paired per round' });
    }
  }
  figures.push(...(await phaseFigures(stack, options, (v, round) => id(v, String(round)))));
  return figures;
}
