import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { projectRoot } from '../../client/dev/project-root';
import type { BenchOptions } from './args';
import type { Figure } from './figures';
import { call, completeTurn, completed, startJob, waitParked } from './jobs';
import { timedRun } from './processes';
import type { Stack } from './stack';
import { pairedRatios, summary } from './stats';

/**
 * CLI wall time, spawn to exit, against `node -e 0` (starting Node at all)
 * and `temporal workflow list` (one round trip from a native binary) on
 * the same server. Rounds interleave the commands; `approve` runs last in
 * each round, on a job parked for it beforehand (its parking is not timed).
 * The CLI keeps its compile cache in the bench's folder (the warm-up round
 * fills it); `pending` also runs without it, paired per round.
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
  const node = process.execPath;
  const bin = join(projectRoot(), 'bin', 'airlock.js');
  const standing = 'cli-standing';
  await park(stack, standing);
  const approveId = (tag: string) => `cli-approve-${tag}`;
  const rotated: Command[] = [
    { label: 'node -e 0', airlock: false, argv: () => [node, ['-e', '0']] },
    { label: 'temporal workflow list', airlock: false, argv: () => [stack.temporalCli, ['workflow', 'list', '--address', stack.server.address, '--namespace', 'default', '--limit', '10']] },
    { label: 'airlock --help', airlock: true, argv: () => [node, [bin, '--help']] },
    { label: 'airlock pending', airlock: true, argv: () => [node, [bin, 'pending']] },
    { label: 'airlock pending, no compile cache', airlock: true, argv: () => [node, [bin, 'pending']], env: { AIRLOCK_COMPILE_CACHE: 'off' } },
    { label: 'airlock show JOB', airlock: true, argv: () => [node, [bin, 'show', standing]] },
  ];
  const approve: Command = { label: 'airlock approve JOB', airlock: true, argv: (tag) => [node, [bin, 'approve', approveId(tag), '--reviewer', 'bench']] };
  const env = stack.processEnv({ AIRLOCK_COMPILE_CACHE: join(stack.dir, 'compile-cache') });

  const runCommand = async (command: Command, tag: string): Promise<number> => {
    const [file, args] = command.argv(tag);
    const run = await timedRun(file, args, { ...env, ...command.env });
    if (run.code !== 0) throw new Error(`${command.label} exited ${run.code}: ${run.stderr.trim() || run.stdout.trim()}`);
    return run.ms;
  };
  const byCommand: number[][] = rotated.map(() => []);
  const approveSamples: number[] = [];
  // Round -1 warms up and does not count; each round starts one command further on.
  for (let round = -1; round < options.cliRounds; round++) {
    const tag = round < 0 ? 'warm' : String(round);
    await park(stack, approveId(tag));
    for (let k = 0; k < rotated.length; k++) {
      const index = (k + Math.max(round, 0)) % rotated.length;
      const command = rotated[index];
      if (command === undefined) continue;
      const ms = await runCommand(command, tag);
      if (round >= 0) byCommand[index]?.push(ms);
    }
    const ms = await runCommand(approve, tag);
    if (round >= 0) approveSamples.push(ms);
    await completed(stack.client, approveId(tag));
  }
  const all: Array<[Command, number[]]> = [...rotated.map((c, i): [Command, number[]] => [c, byCommand[i] ?? []]), [approve, approveSamples]];

  const samplesOf = (label: string): number[] => byCommand[rotated.findIndex((c) => c.label === label)] ?? [];
  const nodeMs = samplesOf('node -e 0');
  const temporalMs = samplesOf('temporal workflow list');
  const floor = nodeMs.map((ms, i) => ms + (temporalMs[i] ?? Number.NaN));
  const figures: Figure[] = [];
  for (const [command, samples] of all) {
    const s = summary(samples);
    figures.push({ part: 'cli', name: command.label, unit: 'ms', value: s.median, p95: s.p95, n: s.n, note: 'spawn to exit' });
  }
  for (const [command, samples] of all) {
    if (!command.airlock) continue;
    const toNode = summary(pairedRatios(samples, nodeMs));
    figures.push({ part: 'cli', name: `${command.label} / node -e 0`, unit: 'ratio', value: toNode.median, p95: toNode.p95, n: toNode.n, note: 'paired per round' });
    const toFloor = summary(pairedRatios(samples, floor));
    figures.push({ part: 'cli', name: `${command.label} / (node -e 0 + temporal workflow list)`, unit: 'ratio', value: toFloor.median, p95: toFloor.p95, n: toFloor.n, note: 'paired per round' });
    const toTemporal = summary(pairedRatios(samples, temporalMs));
    figures.push({ part: 'cli', name: `${command.label} / temporal workflow list`, unit: 'ratio', value: toTemporal.median, p95: toTemporal.p95, n: toTemporal.n, note: 'paired per round' });
  }
  const cached = summary(pairedRatios(samplesOf('airlock pending'), samplesOf('airlock pending, no compile cache')));
  figures.push({ part: 'cli', name: 'airlock pending: compile cache / none', unit: 'ratio', value: cached.median, p95: cached.p95, n: cached.n, note: 'paired per round' });
  return figures;
}
