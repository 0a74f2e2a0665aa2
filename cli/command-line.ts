import { Command as Program, CommanderError, Option } from 'commander';
import { commands } from './command-registry';
import { isGroup, type Command, type CommandIo, type ParsedArgs } from './command';
import { UsageError } from '../client/errors';
import { commandHelp, groupHelp, programHelp } from './help-text';
import { packageVersion } from '../host/package-version';

/**
 * The command line parsed by commander, built from the registry: flags,
 * arguments, `--help` and `--version`. Loaded only when a command line is
 * more than a plain request for help (see `cli.ts`).
 */

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

/**
 * Parses `argv` (already resolved to a known command): the command's
 * arguments, or undefined once help or the version is printed. A wrong
 * command line is a `UsageError` of one line.
 */
export async function parseCommandLine(argv: readonly string[], io: CommandIo, usage: string | undefined): Promise<ParsedArgs | undefined> {
  let args: ParsedArgs | undefined;
  try {
    await program(io, (parsed) => (args = parsed)).parseAsync([...argv], { from: 'user' });
  } catch (err) {
    if (!(err instanceof CommanderError)) throw err;
    // `--help` and `--version` end the parse with exit code 0, having printed what was asked.
    if (err.exitCode === 0) return undefined;
    throw new UsageError(usageLine(err, usage));
  }
  return args;
}
