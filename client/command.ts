import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { AirlockConfig, parseConfig } from '../core/config';
import { UsageError } from './errors';
import { writeLine } from './process-output';

export type OptionSpec = NonNullable<ParseArgsConfig['options']>;

export interface CommandIo {
  /**
   * One line (or a block the command laid out) to stdout; control characters
   * are shown escaped. Values from jobs, models, rules or the audit log go in
   * through `display`, which also escapes their newlines.
   */
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  readonly env: NodeJS.ProcessEnv;
  /** The environment configuration, parsed once on first use. */
  readonly config: () => AirlockConfig;
}

export interface ParsedArgs {
  readonly values: Record<string, string | boolean | string[] | boolean[] | undefined>;
  readonly positionals: string[];
}

/** What the top level knows of a command without loading it: enough for help, usage errors and parsing. */
export interface CommandSpec {
  readonly name: string;
  readonly summary: string;
  readonly usage: string;
  readonly options: OptionSpec;
}

/** What a command does once its arguments parse; returns the exit code (0 when omitted). */
export type CommandRun = (args: ParsedArgs, io: CommandIo, command: CommandSpec) => Promise<number | void>;

export interface Command extends CommandSpec {
  /** Loads the command's module, and with it only what that command imports. */
  readonly load: () => Promise<CommandRun>;
}

/** A command made of subcommands (`airlock rules list`); each subcommand is its own command. */
export interface CommandGroup {
  readonly name: string;
  readonly summary: string;
  readonly subcommands: readonly Command[];
}

export function isGroup(entry: Command | CommandGroup): entry is CommandGroup {
  return 'subcommands' in entry;
}

export function parseCommandArgs(command: CommandSpec, argv: readonly string[]): ParsedArgs {
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      options: { ...command.options, help: { type: 'boolean', short: 'h' } },
      allowPositionals: true,
      strict: true,
    });
    return { values, positionals };
  } catch (err) {
    throw new UsageError(`${(err as Error).message.split('\n')[0]}; usage: ${command.usage}`);
  }
}

/** Required on first use: `--help` and usage errors end before anything loads zod. */
function configModule(): { parseConfig: typeof parseConfig } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a static import would load zod for every command
  return require('../core/config') as { parseConfig: typeof parseConfig };
}

export function createIo(env: NodeJS.ProcessEnv = process.env): CommandIo {
  let config: AirlockConfig | undefined;
  return {
    out: (text) => writeLine(process.stdout, text),
    err: (text) => writeLine(process.stderr, text),
    env,
    config: () => (config ??= configModule().parseConfig(env)),
  };
}

/** A single positional job id, or a usage error. */
export function jobIdArg(command: CommandSpec, args: ParsedArgs): string {
  const [jobId, ...rest] = args.positionals;
  if (jobId === undefined || rest.length > 0) throw new UsageError(`expected one job id; usage: ${command.usage}`);
  return jobId;
}

export function stringOption(args: ParsedArgs, name: string): string | undefined {
  const value = args.values[name];
  return typeof value === 'string' ? value : undefined;
}

export function printJson(io: CommandIo, value: unknown): void {
  io.out(JSON.stringify(value, null, 2));
}
