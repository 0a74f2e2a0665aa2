import type { AirlockConfig, parseConfig } from '../core/config/config';
import { UsageError } from '../client/errors';
import { writeLine } from './process-output';

/** One flag of a command, as `--help`, completion and the parser see it. */
export interface OptionDef {
  readonly type: 'string' | 'boolean';
  /** The flag may be given more than once; its values are collected in order. */
  readonly multiple?: boolean;
  /** A one-letter alias (`-q`). */
  readonly short?: string;
  /** The value's placeholder in help and usage errors (`--goal TEXT`); string flags only. */
  readonly value?: string;
  /** One line for `--help`. */
  readonly description: string;
}

/** The flags of a command by long name (`max-turns` for `--max-turns`); `--help` is added to every command. */
export type OptionSpec = Readonly<Record<string, OptionDef>>;

/** A positional argument, in order; only the last may be optional. */
export interface ArgumentDef {
  readonly name: string;
  readonly description: string;
  readonly optional?: boolean;
}

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
  /** One line: the command list and the first line of `--help`. */
  readonly summary: string;
  /** More about the command, shown by `--help` after the summary. */
  readonly details?: string;
  readonly usage: string;
  readonly arguments?: readonly ArgumentDef[];
  readonly options: OptionSpec;
  /** Whole command lines (`airlock show job-1`); `--help` shows each, and every command has one. */
  readonly examples: readonly string[];
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
  readonly examples: readonly string[];
}

export function isGroup(entry: Command | CommandGroup): entry is CommandGroup {
  return 'subcommands' in entry;
}

/** Required on first use: `--help` and usage errors end before anything loads zod. */
function configModule(): { parseConfig: typeof parseConfig } {
  // eslint-disable-next-line @typescript-eslint/no-require-imports -- a static import would load zod for every command
  return require('../core/config/config') as { parseConfig: typeof parseConfig };
}

/** Where a command's lines go: this process's stdout and stderr, unless a resident process passes them on. */
export type LineSink = (stream: 'out' | 'err', text: string) => void;

const toThisProcess: LineSink = (stream, text) => writeLine(stream === 'out' ? process.stdout : process.stderr, text);

export function createIo(env: NodeJS.ProcessEnv = process.env, sink: LineSink = toThisProcess): CommandIo {
  let config: AirlockConfig | undefined;
  return {
    out: (text) => sink('out', text),
    err: (text) => sink('err', text),
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
