import { commands } from './command-registry';
import { createIo, isGroup, type Command, type CommandGroup, type CommandIo } from './command';
import { describeOperatorError } from '../host/operator-errors';
import { enableLinearRegexEngine } from '../host/linear-regex-engine';
import { display } from '../core/redaction/display-text';
import { UsageError } from '../client/errors';
import { closest, commandHelp, groupHelp, programHelp } from './help-text';
import { packageVersion } from '../host/package-version';
import { flushed, guardStream, writeLine } from './process-output';

/** What the command line asks for, once the registry knows the command. */
type Target =
  | { readonly kind: 'program'; readonly argv: readonly string[] }
  | { readonly kind: 'group'; readonly group: CommandGroup; readonly argv: readonly string[] }
  | { readonly kind: 'command'; readonly command: Command; readonly label: string; readonly argv: readonly string[] };

const isHelp = (arg: string) => arg === '--help' || arg === '-h';
const isFlag = (arg: string) => arg.startsWith('-');

function unknownCommand(typed: string, names: readonly string[], where: string): UsageError {
  const guess = closest(typed, names);
  const hint = guess !== undefined ? ` (did you mean ${guess}?)` : '';
  return new UsageError(`unknown command ${JSON.stringify(typed)}${hint}; run ${where} --help`);
}

/**
 * Finds the command before commander parses, so an unknown name is one line
 * with a hint (commander would print the whole help for `frobnicate --help`),
 * `help CMD [SUB]` is `CMD [SUB] --help`, and a bare group shows its help.
 */
function resolve(argv: readonly string[]): Target {
  const [first, ...rest] = argv;
  if (first === undefined) return { kind: 'program', argv: ['--help'] };
  if (first === 'help') return rest.length === 0 ? { kind: 'program', argv: ['--help'] } : resolve([...rest.filter((a) => !isHelp(a)), '--help']);
  if (isFlag(first)) return { kind: 'program', argv };
  const entry = commands.find((c) => c.name === first);
  if (entry === undefined) throw unknownCommand(first, [...commands.map((c) => c.name), 'help'], 'airlock');
  if (!isGroup(entry)) return { kind: 'command', command: entry, label: entry.name, argv };
  const subIndex = rest.findIndex((a) => !isFlag(a));
  const subName = rest[subIndex];
  if (subName === undefined) {
    if (rest.length === 0 || rest.some(isHelp)) return { kind: 'group', group: entry, argv: [entry.name, '--help'] };
    const names = entry.subcommands.map((c) => c.name).join(', ');
    throw new UsageError(`choose a subcommand (${names}); run airlock ${entry.name} --help`);
  }
  const command = entry.subcommands.find((c) => c.name === subName);
  if (command === undefined) throw unknownCommand(subName, entry.subcommands.map((c) => c.name), `airlock ${entry.name}`);
  return { kind: 'command', command, label: `${entry.name} ${command.name}`, argv };
}

/**
 * The help (or version) asked for in a plain form (`airlock`, `--help`,
 * `help CMD`, a bare group, `CMD --help`, `--version`), printed without
 * loading the parser: it is the text the parser would print. Undefined for
 * anything else.
 */
function plainHelp(target: Target): string | undefined {
  const [first, ...more] = target.argv;
  if (target.kind === 'program') {
    if (more.length > 0 || first === undefined) return undefined;
    return isHelp(first) ? programHelp(commands) : first === '--version' || first === '-V' ? packageVersion() : undefined;
  }
  if (target.kind === 'group') return groupHelp(target.group);
  const words = target.label.split(' ').length;
  const rest = target.argv.slice(words);
  return rest.length === 1 && isHelp(rest[0] ?? '') ? commandHelp(target.command) : undefined;
}

/** Runs one command; every known error becomes one line on stderr and a non-zero exit code. */
export async function runCli(argv: readonly string[], io: CommandIo = createIo()): Promise<number> {
  // Named from the first word already: an unknown subcommand is `airlock rules: …`.
  let label = commands.find((c) => c.name === argv[0])?.name;
  try {
    const target = resolve(argv);
    label = target.kind === 'command' ? target.label : target.kind === 'group' ? target.group.name : undefined;
    const help = plainHelp(target);
    if (help !== undefined) {
      io.out(help);
      return 0;
    }
    // The parser loads only for a command line that is more than a plain request for help.
    const { parseCommandLine } = await import('./command-line');
    const args = await parseCommandLine(target.argv, io, target.kind === 'command' ? target.command.usage : undefined);
    if (target.kind !== 'command' || args === undefined) return 0;
    const run = await target.command.load();
    return (await run(args, io, target.command)) ?? 0;
  } catch (err) {
    io.err(label !== undefined ? display`airlock ${label}: ${describeOperatorError(err)}` : display`airlock: ${describeOperatorError(err)}`);
    return err instanceof UsageError ? 2 : 1;
  }
}

/** Ends the process once all output is written; a reader that went away is not a failure. */
async function exitWhenWritten(code: number): Promise<never> {
  const failure = await flushed();
  if (failure !== undefined) {
    // Loaded here only: it brings @temporalio/common, which `--help` does without.
    const { describeError } = await import('../core/temporal/describe-error');
    writeLine(process.stderr, display`airlock: cannot write the output: ${describeError(failure)}`);
    await flushed();
  }
  // Explicit: a worker or dev stack may leave handles behind; the output is written by now.
  process.exit(failure !== undefined && code === 0 ? 1 : code);
}

export function main(argv: readonly string[]): void {
  // Rule patterns (rules validate/test/rehearse, and `airlock dev`'s workers) match in linear time.
  enableLinearRegexEngine();
  guardStream(process.stdout);
  guardStream(process.stderr);
  void runCli(argv)
    .catch((err: unknown) => {
      writeLine(process.stderr, display`airlock: ${describeOperatorError(err)}`);
      return 1;
    })
    .then(exitWhenWritten);
}
