import { isGroup, type Command, type CommandGroup, type CommandSpec } from './command';

/**
 * Shell completion scripts generated from the registry: commands,
 * subcommands and each command's flags. A flag that takes a value leaves the
 * word to the shell's own completion (file names).
 */

export const completionShells = ['bash', 'zsh'] as const;
export type CompletionShell = (typeof completionShells)[number];

type Entries = ReadonlyArray<Command | CommandGroup>;

/** Fixed values worth offering; everything else a flag takes is free text or a file. */
const argumentValues: Readonly<Record<string, readonly string[]>> = { completion: completionShells };

function flagsOf(spec: CommandSpec): string[] {
  return [...Object.keys(spec.options).map((name) => `--${name}`), '--help'];
}

function valueFlagsOf(spec: CommandSpec): string[] {
  return Object.entries(spec.options)
    .filter(([, def]) => def.type === 'string')
    .map(([name]) => `--${name}`);
}

/** Every leaf command with its path: `show`, `rules test`. */
function leaves(entries: Entries): Array<{ readonly path: string; readonly spec: Command }> {
  return entries.flatMap((e) => (isGroup(e) ? e.subcommands.map((s) => ({ path: `${e.name} ${s.name}`, spec: s })) : [{ path: e.name, spec: e }]));
}

/** Every flag that takes a value, as a shell `case` pattern (`--none` when there is none). */
function valueFlagPattern(entries: Entries): string {
  return [...new Set(leaves(entries).flatMap((l) => valueFlagsOf(l.spec)))].join('|') || '--none';
}

/**
 * The end of the loop over the words typed so far, the same in bash and
 * zsh: skip a flag's value, and take the first two other words as the
 * command and (for a group or `help`) its subcommand.
 */
function commandWordLines(previousWord: string, valueFlags: string, entries: Entries): string[] {
  return [
    `    case "${previousWord}" in ${valueFlags}) continue ;; esac`,
    '    n=$((n+1))',
    '    if (( n == 1 )); then cmd="$w"; elif (( n == 2 )); then',
    `      case "$cmd" in ${['help', ...entries.filter(isGroup).map((g) => g.name)].join('|')}) cmd="$cmd $w" ;; esac`,
    '    fi',
    '  done',
  ];
}

/** Single-quoted for sh and zsh. */
function quote(text: string): string {
  return `'${text.replace(/'/g, `'\\''`)}'`;
}

export function bashCompletion(entries: Entries): string {
  const topWords = [...entries.map((e) => e.name), 'help', '--help', '--version'].join(' ');
  const groups = entries.filter(isGroup);
  const valueFlags = valueFlagPattern(entries);
  const leafCases = leaves(entries).map(({ path, spec }) => {
    const words = [...flagsOf(spec), ...(argumentValues[spec.name] ?? [])].join(' ');
    return `    ${quote(path)}) words=${quote(words)} ;;`;
  });
  return [
    '# bash completion for airlock; load it with: source <(airlock completion bash)',
    '_airlock() {',
    '  local cur="${COMP_WORDS[COMP_CWORD]}" prev="" cmd="" words="" i w',
    '  (( COMP_CWORD > 0 )) && prev="${COMP_WORDS[COMP_CWORD-1]}"',
    // A flag's value is the user's to type (or a file name).
    `  case "$prev" in ${valueFlags}) return 0 ;; esac`,
    // The command and subcommand typed so far: the first two words that are neither flags nor flag values.
    '  local n=0',
    '  for (( i=1; i<COMP_CWORD; i++ )); do',
    '    w="${COMP_WORDS[i]}"',
    `    case "$w" in -*) continue ;; esac`,
    ...commandWordLines('${COMP_WORDS[i-1]}', valueFlags, entries),
    '  case "$cmd" in',
    `    '') words=${quote(topWords)} ;;`,
    `    help) words=${quote(entries.map((e) => e.name).join(' '))} ;;`,
    ...groups.map((g) => `    ${quote(`help ${g.name}`)}|${quote(g.name)}) words=${quote([...g.subcommands.map((s) => s.name), '--help'].join(' '))} ;;`),
    ...leafCases,
    '  esac',
    '  COMPREPLY=( $(compgen -W "$words" -- "$cur") )',
    '}',
    'complete -o default -F _airlock airlock',
    '',
  ].join('\n');
}

/** `name:description` for zsh's `_describe`, colons in the name escaped. */
function described(name: string, description: string): string {
  return quote(`${name.replace(/:/g, '\\:')}:${description}`);
}

/** Its locals avoid zsh's special names (`path` is $PATH as an array). */
export function zshCompletion(entries: Entries): string {
  const top = [...entries.map((e) => described(e.name, e.summary)), described('help', 'Show help for a command')];
  const groups = entries.filter(isGroup);
  const leafCases = leaves(entries).map(({ path, spec }) => {
    const flags = [...Object.entries(spec.options).map(([name, def]) => described(`--${name}`, def.description)), described('--help', 'Show help for this command')];
    const values = (argumentValues[spec.name] ?? []).map((v) => described(v, v));
    const valueFlags = valueFlagsOf(spec);
    return [
      `    ${quote(path)})`,
      ...(valueFlags.length > 0 ? [`      case "$prev" in ${valueFlags.join('|')}) _files; return ;; esac`] : []),
      `      items=(${[...flags, ...values].join(' ')})`,
      '      _describe -t flags option items ;;',
    ].join('\n');
  });
  const valueFlags = valueFlagPattern(entries);
  return [
    '#compdef airlock',
    '# zsh completion for airlock; load it with: source <(airlock completion zsh), or save it as _airlock in a folder of $fpath',
    '_airlock() {',
    '  local -a items',
    '  local prev="${words[CURRENT-1]}" cmd="" n=0 i w',
    '  for (( i=2; i<CURRENT; i++ )); do',
    '    w="${words[i]}"',
    '    [[ "$w" == -* ]] && continue',
    ...commandWordLines('${words[i-1]}', valueFlags, entries),
    '  case "$cmd" in',
    `    '')`,
    `      items=(${top.join(' ')})`,
    "      _describe -t commands 'airlock command' items ;;",
    '    help)',
    `      items=(${entries.map((e) => described(e.name, e.summary)).join(' ')})`,
    "      _describe -t commands 'airlock command' items ;;",
    ...groups.map((g) =>
      [
        `    ${quote(`help ${g.name}`)}|${quote(g.name)})`,
        `      items=(${g.subcommands.map((s) => described(s.name, s.summary)).join(' ')})`,
        `      _describe -t commands ${quote(`airlock ${g.name} command`)} items ;;`,
      ].join('\n'),
    ),
    ...leafCases,
    '  esac',
    '}',
    'if [[ "${funcstack[1]}" == "_airlock" ]]; then _airlock "$@"; else compdef _airlock airlock; fi',
    '',
  ].join('\n');
}
