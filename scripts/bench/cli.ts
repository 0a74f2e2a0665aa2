import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../ops/dev/project-root';
import type { BenchOptions } from './args';
import type { Figure } from './figures';
import { call, completeTurn, completed, startJob, waitParked } from './jobs';
import { stopResidents, timedRun } from './processes';
import type { Stack } from './stack';
import { pairedRatios, sampled } from './stats';

/**
 * CLI wall time, spawn to exit, against `node -e 0` (starting Node at all)
 * and `temporal workflow list` (one round trip from a native binary) on
 * the same server. Rounds interleave the commands; each `approve` runs
 * last in its round, on a job parked for it beforehand (its parking is not
 * timed). `pending`, `show` and `approve` run as a user runs them, through
 * the resident CLI process (the warm-up round starts it), and in their own
 * process (`AIRLOCK_CLI_RESIDENT=off`), paired per round; the in-process
 * `pending` also without the compile cache. The CLI keeps its compile
 * cache and its resident process's socket in the bench's folder.
 */

type Command = {
  readonly label: string;
  readonly airlock: boolean;
  readonly argv: (tag: string) => [string, string[]];
  readonly env?: Readonly<Record<string, string>>;
};

async function park(stack: Stack, jobId: string): Promise<void> {
  const name = `${jobId}.txt`;
  writeFileSync(join(stack.root, name), 'parked for the cli bench\n');
  stack.replay.setScript({ turns: [{ tool_calls: [call('fs_delete', { path: name })] }, completeTurn] });
  await startJob(stack.client, jobId);
  await waitParked(stack.client, jobId);
}

export async function cliPart(stack: Stack, options: BenchOptions): Promise<Figure[]> {
  stack.useRules('approvals');
  const standing = 'cli-standing';
  await park(stack, standing);
  const runtime = join(stack.dir, 'run');
  mkdirSync(runtime, { mode: 0o700, recursive: true });
  // Timed through pipes, not at a terminal: `always` lets the warm-up round start the resident process.
  const env = stack.processEnv({ AIRLOCK_COMPILE_CACHE: join(stack.dir, 'compile-cache'), XDG_RUNTIME_DIR: runtime, AIRLOCK_CLI_RESIDENT: 'always' });
  try {
    return await measure(stack, options, env, standing);
  } finally {
    stopResidents(runtime);
  }
}

async function measure(stack: Stack, options: BenchOptions, env: NodeJS.ProcessEnv, standing: string): Promise<Figure[]> {
  const node = process.execPath;
  const bin = join(projectRoot(), 'bin', 'airlock.js');
  const approveId = (tag: string, where: string) => `cli-approve-${where}-${tag}`;
  const here = { AIRLOCK_CLI_RESIDENT: 'off' };
  const rotated: Command[] = [
    { label: 'node -e 0', airlock: false, argv: () => [node, ['-e', '0']] },
    { label: 'temporal workflow list', airlock: false, argv: () => [stack.temporalCli, ['workflow', 'list', '--address', stack.server.address, '--namespace', 'default', '--limit', '10']] },
    { label: 'airlock --help', airlock: true, argv: () => [node, [bin, '--help']] },
    { label: 'airlock pending', airlock: true, argv: () => [node, [bin, 'pending']] },
    { label: 'airlock pending, in its own process', airlock: true, argv: () => [node, [bin, 'pending']], env: here },
    { label: 'airlock pending, in its own process, no compile cache', airlock: true, argv: () => [node, [bin, 'pending']], env: { ...here, AIRLOCK_COMPILE_CACHE: 'off' } },
    { label: 'airlock show JOB', airlock: true, argv: () => [node, [bin, 'show', standing]] },
    { label: 'airlock show JOB, in its own process', airlock: true, argv: () => [node, [bin, 'show', standing]], env: here },
  ];
  const approvals: Command[] = [
    { label: 'airlock approve JOB', airlock: true, argv: (tag) => [node, [bin, 'approve', approveId(tag, 'resident'), '--reviewer', 'bench']] },
    { label: 'airlock approve JOB, in its own process', airlock: true, argv: (tag) => [node, [bin, 'approve', approveId(tag, 'here'), '--reviewer', 'bench']], env: here },
  ];

  const runCommand = async (command: Command, tag: string): Promise<number> => {
    const [file, args] = command.argv(tag);
    const run = await timedRun(file, args, { ...env, ...command.env });
    if (run.code !== 0) throw new Error(`${command.label} exited ${run.code}: ${run.stderr.trim() || run.stdout.trim()}`);
    return run.ms;
  };
  const byCommand: number[][] = rotated.map(() => []);
  const approveSamples: number[][] = approvals.map(() => []);
  // Round -1 warms up and does not count; each round starts one command further on.
  for (let round = -1; round < options.cliRounds; round++) {
    const tag = round < 0 ? 'warm' : String(round);
    for (const where of ['resident', 'here']) await park(stack, approveId(tag, where));
    for (let k = 0; k < rotated.length; k++) {
      const index = (k + Math.max(round, 0)) % rotated.length;
      const command = rotated[index];
      if (command === undefined) continue;
      const ms = await runCommand(command, tag);
      if (round >= 0) byCommand[index]?.push(ms);
    }
    for (const [i, approve] of approvals.entries()) {
      const ms = await runCommand(approve, tag);
      if (round >= 0) approveSamples[i]?.push(ms);
    }
    for (const where of ['resident', 'here']) await completed(stack.client, approveId(tag, where));
  }
  const all: Array<[Command, number[]]> = [
    ...rotated.map((c, i): [Command, number[]] => [c, byCommand[i] ?? []]),
    ...approvals.map((c, i): [Command, number[]] => [c, approveSamples[i] ?? []]),
  ];

  const samplesOf = (label: string): number[] => all.find(([c]) => c.label === label)?.[1] ?? [];
  const nodeMs = samplesOf('node -e 0');
  const temporalMs = samplesOf('temporal workflow list');
  const floor = nodeMs.map((ms, i) => ms + (temporalMs[i] ?? Number.NaN));
  const figures: Figure[] = [];
  const ratio = (name: string, a: number[], b: number[]) => {
    figures.push({ part: 'cli', name, unit: 'ratio', ...sampled(pairedRatios(a, b)), note: 'paired per round' });
  };
  for (const [command, samples] of all) {
    figures.push({ part: 'cli', name: command.label, unit: 'ms', ...sampled(samples), note: 'spawn to exit' });
  }
  for (const [command, samples] of all) {
    if (!command.airlock) continue;
    ratio(`${command.label} / node -e 0`, samples, nodeMs);
    ratio(`${command.label} / (node -e 0 + temporal workflow list)`, samples, floor);
    ratio(`${command.label} / temporal workflow list`, samples, temporalMs);
  }
  for (const what of ['pending', 'show JOB', 'approve JOB']) {
    ratio(`airlock ${what}: resident process / its own process`, samplesOf(`airlock ${what}`), samplesOf(`airlock ${what}, in its own process`));
  }
  ratio('airlock pending, in its own process: compile cache / none', samplesOf('airlock pending, in its own process'), samplesOf('airlock pending, in its own process, no compile cache'));
  return figures;
}
