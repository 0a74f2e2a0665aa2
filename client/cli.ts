import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Command as Program, CommanderError, Option } from 'commander';
import { commands } from './command-registry';
import { createIo, isGroup, type Command, type CommandGroup, type CommandIo, type ParsedArgs } from './command';
import { describeOperatorError } from '../host/operator-errors';
import { display } from '../core/display-text';
import { UsageError } from './errors';
import { closest, commandHelp, groupHelp, programHelp } from './help-text';
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

/** package.json's version: beside `dist/` once built, beside `client/` when run from source. */
function packageVersion(): string {
  for (const file of [join(__dirname, '..', '..', 'package.json'), join(__dirname, '..', 'package.json')]) {
    if (!existsSync(file)) continue;
    const version: unknown = (JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown }).version;
    if (typeof version === 'string') return version;
  }
  return 'unknown';
}

const isStringList = (value: unknown): value is string[] => Array.isArray(value) && value.every((v) => typeof v === 'string');

/** A commander command for one registry entry; its action hands back the parsed arguments. */
function addCommand(parent: Program, spec: Command, picked: (args: ParsedArgs) => void): void {
  const cmd = parent.command(spec.name).description(spec.summary).usage(spec.usage);
  for (const a of spec.arguments ?? []) cmd.argument(a.optional === true ? `[${a.name}]` : `<${a.name}>`, a.description);
  const options = Object.entries(spec.options).map(([name, def]) => {
    const value = def.type === 'string' ? ` <${def.value ?? 'VALUE'}>` : '';
    const option = new Option(`${def.short !== undefined ? `-${def.short}, ` : ''}--${name}${value}`, def.description);
    if (def.multiple === true) option.argParser((value: string, previous: unknown): string[] => [...(isStringList(previous) ? previous : []), value]);
    cmd.addOption(option);
    return { name, option };
  });
  cmd.configureHelp({ formatHelp: () => commandHelp(spec) });
  // Checked here, to name the argument that is one too many (commander only counts them).
  cmd.allowExcessArguments(true);
  cmd.action(() => {
    const extra = cmd.args[spec.arguments?.length ?? 0];
    if (extra !== undefined) throw new UsageError(`unexpected argument ${JSON.stringify(extra)}; usage: ${spec.usage}`);
    const values: Record<string, string | boolean | string[] | undefined> = {};
    for (const { name, option } of options) values[name] = cmd.getOptionValue(option.attributeName()) as string | boolean | string[] | undefined;
    picked({ values, positionals: [...cmd.args] });
  });
}

/** The commander program for the registry: parsing, `--help` and `--version`; running is left to `runCli`. */
function program(io: CommandIo, picked: (args: ParsedArgs) => void): Program {
  const root = new Program('airlock')
    .exitOverride()
    // Help and the version go through the CLI's own output (flushed before exit); errors become one line in `runCli`.
    .configureOutput({ writeOut: (text) => io.out(text.replace(/\n$/, '')), writeErr: (text) => io.err(text.replace(/\n$/, '')), outputError: () => undefined })
    .helpCommand(false)
    .version(packageVersion(), '-V, --version', "Print airlock's version")
    .configureHelp({ formatHelp: () => programHelp(commands) });
  for (const entry of commands) {
    if (!isGroup(entry)) {
      addCommand(root, entry, picked);
      continue;
    }
    const group = root.command(entry.name).description(entry.summary).configureHelp({ formatHelp: () => groupHelp(entry) });
    for (const sub of entry.subcommands) addCommand(group, sub, picked);
  }
  return root;
}

/** Commander's error as one line of ours: what was wrong, and where to look. */
function usageLine(err: CommanderError, usage: string | undefined): string {
  const tail = usage !== undefined ? `; usage: ${usage}` : '; run airlock --help';
  const missingValue = /option '(?:-\w, )?(--[\w-]+) <([^>]+)>' argument missing/.exec(err.message);
  if (missingValue !== null) return `${missingValue[1] ?? ''} takes a value (${missingValue[2] ?? ''})${tail}`;
  const [first = err.message, ...more] = err.message.split('\n');
  const text = first.replace(/^error: /, '').replace(/'([^']*)'/g, '"$1"');
  const guess = /\(Did you mean (.+?)\?\)/.exec(more.join(' '))?.[1];
  const hint = guess !== undefined ? ` (did you mean ${guess}?)` : '';
  return `${text}${hint}${tail}`;
}

/** Runs one command; every known error becomes one line on stderr and a non-zero exit code. */
export async function runCli(argv: readonly string[], io: CommandIo = createIo()): Promise<number> {
  // Named from the first word already: an unknown subcommand is `airlock rules: …`.
  let label = commands.find((c) => c.name === argv[0])?.name;
  try {
    const target = resolve(argv);
    label = target.kind === 'command' ? target.label : target.kind === 'group' ? target.group.name : undefined;
    let args: ParsedArgs | undefined;
    try {
      await program(io, (parsed) => (args = parsed)).parseAsync([...target.argv], { from: 'user' });
    } catch (err) {
      if (!(err instanceof CommanderError)) throw err;
      // `--help` and `--version` end the parse with exit code 0, having printed what was asked.
      if (err.exitCode === 0) return 0;
      throw new UsageError(usageLine(err, target.kind === 'command' ? target.command.usage : undefined));
    }
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
