import { approveCommand } from './commands/approve';
import { denyCommand } from './commands/deny';
import { devCommand } from './commands/dev';
import { pendingCommand } from './commands/pending';
import { replayCommand } from './commands/replay';
import { runCommand } from './commands/run';
import { setupCommand } from './commands/setup';
import { showCommand } from './commands/show';
import { workerCommand } from './commands/worker';
import { createIo, parseCommandArgs, type Command, type CommandIo } from './command';
import { describeCliError, UsageError } from './errors';

export const commands: readonly Command[] = [
  devCommand,
  runCommand,
  pendingCommand,
  showCommand,
  approveCommand,
  denyCommand,
  workerCommand,
  replayCommand,
  setupCommand,
];

function help(io: CommandIo): void {
  io.out('airlock: a durable approval gate between what an AI agent proposes and what happens on your server\n');
  io.out('usage: airlock COMMAND [options]    (airlock COMMAND --help for its options)\n');
  for (const c of commands) io.out(`  ${c.name.padEnd(9)} ${c.summary}`);
}

/** Runs one command; every known error becomes one line on stderr and a non-zero exit code. */
export async function runCli(argv: readonly string[], io: CommandIo = createIo()): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    help(io);
    return name === undefined ? 2 : 0;
  }
  const command = commands.find((c) => c.name === name);
  try {
    if (command === undefined) throw new UsageError(`unknown command ${JSON.stringify(name)}; run airlock --help`);
    const args = parseCommandArgs(command, rest);
    if (args.values.help === true) {
      io.out(`${command.summary}\nusage: ${command.usage}`);
      return 0;
    }
    return (await command.run(args, io)) ?? 0;
  } catch (err) {
    io.err(`airlock${command === undefined ? '' : ` ${command.name}`}: ${describeCliError(err)}`);
    return err instanceof UsageError ? 2 : 1;
  }
}

export function main(argv: readonly string[]): void {
  runCli(argv).then(
    (code) => process.exit(code),
    (err: unknown) => {
      process.stderr.write(`airlock: ${describeCliError(err)}\n`);
      process.exit(1);
    },
  );
}
