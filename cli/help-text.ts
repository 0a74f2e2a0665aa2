import { isGroup, type Command, type CommandGroup, type CommandSpec, type OptionDef } from './command';

/**
 * `--help` for the program, a group and a command, laid out like the CLIs
 * people know (gh, temporal): what it does, usage, arguments, flags with one
 * line each, examples. Built from the registry alone, so nothing loads.
 */

const TAGLINE = 'airlock: a durable approval gate between what an AI agent proposes and what happens on your server';
const HELP_FLAG = { term: '-h, --help', description: 'Show help for this command' };

/** `--goal TEXT`, `-q, --queue QUEUE`; the same spelling the parser is given. */
export function flagTerm(name: string, def: OptionDef): string {
  const short = def.short !== undefined ? `-${def.short}, ` : '    ';
  const value = def.type === 'string' ? ` ${def.value ?? 'VALUE'}` : '';
  return `${short}--${name}${value}`;
}

function table(rows: ReadonlyArray<{ readonly term: string; readonly description: string }>): string[] {
  const width = Math.max(...rows.map((r) => r.term.length));
  return rows.map((r) => `  ${r.term.padEnd(width)}   ${r.description}`);
}

function section(title: string, lines: readonly string[]): string[] {
  return lines.length === 0 ? [] : ['', title, ...lines];
}

function examples(list: readonly string[]): string[] {
  return section('EXAMPLES', list.map((e) => `  $ ${e}`));
}

export function commandHelp(spec: CommandSpec): string {
  const flags = Object.entries(spec.options).map(([name, def]) => ({
    term: flagTerm(name, def),
    description: def.multiple === true ? `${def.description} (repeatable)` : def.description,
  }));
  const args = (spec.arguments ?? []).map((a) => ({ term: a.name, description: a.optional === true ? `${a.description} (optional)` : a.description }));
  return [
    spec.summary,
    ...(spec.details !== undefined ? ['', spec.details] : []),
    ...section('USAGE', [`  ${spec.usage}`]),
    ...section('ARGUMENTS', args.length > 0 ? table(args) : []),
    ...section('FLAGS', table([...flags, HELP_FLAG])),
    ...examples(spec.examples),
  ].join('\n');
}

export function groupHelp(group: CommandGroup): string {
  return [
    group.summary,
    ...section('USAGE', [`  airlock ${group.name} COMMAND [flags]`]),
    ...section('COMMANDS', table(group.subcommands.map((c) => ({ term: c.name, description: c.summary })))),
    ...section('FLAGS', table([HELP_FLAG])),
    ...examples(group.examples),
    ...section('LEARN MORE', [`  airlock help ${group.name} COMMAND (or airlock ${group.name} COMMAND --help) for a command's flags and examples`]),
  ].join('\n');
}

export function programHelp(commands: ReadonlyArray<Command | CommandGroup>): string {
  const rows = commands.map((c) => ({
    term: c.name,
    description: isGroup(c) ? `${c.summary} (${c.subcommands.map((s) => s.name).join(', ')})` : c.summary,
  }));
  return [
    TAGLINE,
    ...section('USAGE', ['  airlock COMMAND [flags]            (npx airlock … inside a project that installed it)']),
    ...section('COMMANDS', table([...rows, { term: 'help', description: 'Show help for a command: airlock help COMMAND [SUBCOMMAND]' }])),
    ...section('FLAGS', table([{ term: '-h, --help', description: 'Show this help' }, { term: '-V, --version', description: "Print airlock's version" }])),
    ...examples(['airlock dev --demo', 'airlock pending', 'airlock approve JOB_ID --reason "checked the target"', 'airlock help rules test']),
    ...section('CONNECTION', [
      '  Read as the temporal CLI reads them: TEMPORAL_ADDRESS (default 127.0.0.1:7233), TEMPORAL_NAMESPACE (default),',
      '  TEMPORAL_API_KEY, TEMPORAL_TLS, TEMPORAL_TLS_CLIENT_CERT_PATH, TEMPORAL_TLS_CLIENT_KEY_PATH,',
      '  TEMPORAL_TLS_SERVER_CA_CERT_PATH, TEMPORAL_TLS_SERVER_NAME (and their _DATA forms), TEMPORAL_GRPC_META_*,',
      '  over the temporal.toml profile TEMPORAL_PROFILE (file: TEMPORAL_CONFIG_FILE, else ~/.config/temporalio/temporal.toml)',
    ]),
    ...section('LEARN MORE', ['  airlock help COMMAND (or airlock COMMAND --help) for its flags and examples; airlock completion bash|zsh for shell completion']),
  ].join('\n');
}

/** The closest of `names` to a mistyped one, if any is close enough to be the one meant. */
export function closest(typed: string, names: readonly string[]): string | undefined {
  let best: { readonly name: string; readonly distance: number } | undefined;
  for (const name of names) {
    const distance = editDistance(typed.toLowerCase(), name.toLowerCase());
    if (best === undefined || distance < best.distance) best = { name, distance };
  }
  if (best === undefined) return undefined;
  return best.distance <= Math.max(1, Math.floor(best.name.length / 3)) || best.name.startsWith(typed) ? best.name : undefined;
}

function editDistance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current.push(Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost));
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}
