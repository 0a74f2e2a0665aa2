import { commands } from './command-registry';
import { createIo, isGroup, parseCommandArgs, type Command, type CommandIo } from './command';
import { describeOperatorError } from '../host/operator-errors';
import { display } from '../core/display-text';
import { UsageError } from './errors';
import { flushed, guardStream, writeLine } from './process-output';

function help(io: CommandIo): void {
  io.out('airlock: a durable approval gate between what an AI agent proposes and what happens on your server\n');
  io.out('usage: airlock COMMAND [options]    (airlock COMMAND --help for its options)\n');
  for (const c of commands) io.out(`  ${c.name.padEnd(9)} ${c.summary}`);
}

/** The command to run and its arguments, looking one level into a group. */
function pick(name: string, rest: readonly string[]): { command: Command; label: string; args: readonly string[] } {
  const entry = commands.find((c) => c.name === name);
  if (entry === undefined) throw new UsageError(`unknown command ${JSON.stringify(name)}; run airlock --help`);
  if (!isGroup(entry)) return { command: entry, label: entry.name, args: rest };
  const [sub, ...subArgs] = rest;
  const names = entry.subcommands.map((c) => c.name).join(', ');
  const command = entry.subcommands.find((c) => c.name === sub);
  if (command === undefined) {
    throw new UsageError(`${entry.name} takes a subcommand (${names})${sub === undefined ? '' : `, not ${JSON.stringify(sub)}`}`);
  }
  return { command, label: `${entry.name} ${command.name}`, args: subArgs };
}

/** Runs one command; every known error becomes one line on stderr and a non-zero exit code. */
export async function runCli(argv: readonly string[], io: CommandIo = createIo()): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    help(io);
    return name === undefined ? 2 : 0;
  }
  let label = name;
  try {
    const picked = pick(name, rest);
    label = picked.label;
    const args = parseCommandArgs(picked.command, picked.args);
    if (args.values.help === true) {
      io.out(`${picked.command.summary}\nusage: ${picked.command.usage}`);
      return 0;
    }
    const run = await picked.command.load();
    return (await run(args, io, picked.command)) ?? 0;
  } catch (err) {
    io.err(display`airlock ${label}: ${describeOperatorError(err)}`);
    return err instanceof UsageError ? 2 : 1;
  }
}

/** Ends the process once all output is written; a reader that went away is not a failure. */
async function exitWhenWritten(code: number): Promise<never> {
  const failure = await flushed();
  if (failure !== undefined) {
    // Loaded here only: it brings @temporalio/common, which `--help` does without.
    const { describeError } = await import('../core/describe-error');
    writeLine(process.stderr, display`airlock: cannot write the output: ${describeError(failure)}`);
    await flushed();
  }
  // Explicit: a worker or dev stack may leave handles behind; the output is written by now.
  process.exit(failure !== undefined && code === 0 ? 1 : code);
}

export function main(argv: readonly string[]): void {
  guardStream(process.stdout);
  guardStream(process.stderr);
  void runCli(argv)
    .catch((err: unknown) => {
      writeLine(process.stderr, display`airlock: ${describeOperatorError(err)}`);
      return 1;
    })
    .then(exitWhenWritten);
}
