import { basenamePosix, normalizePosix, resolvePosix } from '../util/posix-path';
import type { ToolCategory } from '../tools/registry';
import { factOf, type CallFacts } from '../tools/facts';

/**
 * Built-in detectors for dangerous operations. Deterministic and
 * judge-independent; each is usable in a rule as `{ detector: NAME }` and is
 * reported by name when it fires.
 */
export const detectorNames = [
  'recursive_delete',
  'wildcard_delete',
  'permission_change',
  'ownership_change',
  'world_writable',
  'setuid',
  'mode_widening',
  'outside_roots',
  'symlink_path',
  'external_send',
  'denied_command',
  'destroys_data',
  'hard_link',
  'upstream_change',
] as const;
export type DetectorName = (typeof detectorNames)[number];

/** Commands refused by `denied_command` when a rules file names none. */
export const defaultDeniedCommands = [
  'mkfs',
  'dd',
  'fdisk',
  'parted',
  'wipefs',
  'shred',
  'shutdown',
  'reboot',
  'poweroff',
  'halt',
  'init',
  'iptables',
  'nft',
  'userdel',
  'usermod',
  'passwd',
  'visudo',
  'crontab',
  'chattr',
];

/** Frozen with the job's snapshot. */
export interface DetectorSettings {
  /** The tools' roots as the agent side knows them; empty: `outside_roots` never fires. */
  readonly roots: readonly string[];
  /** Hosts outbound calls may reach; `*.example.com` covers subdomains. */
  readonly allowedHosts: readonly string[];
  readonly deniedCommands: readonly string[];
}


export interface DetectorInput {
  readonly toolName: string;
  readonly category: ToolCategory;
  readonly args: unknown;
  /** The paths the call acts on, as the model gave them. */
  readonly targets: readonly string[];
  readonly settings: DetectorSettings;
  readonly facts?: CallFacts | undefined;
  /** The tools side was asked for this call's facts and gave none (unreachable, failed). */
  readonly factsMissing?: boolean;
}

// Zero-width and other format characters would let "r\u200bm" pass for another word.
// eslint-disable-next-line airlock/no-module-state -- used only by String#replace, which starts at 0 and leaves lastIndex at 0
const invisible = /[\p{Cf}]/gu;

function clean(text: string): string {
  return text.normalize('NFKC').replace(invisible, '');
}

function argv(args: unknown): string[] {
  const value = (args as { argv?: unknown })?.argv;
  return Array.isArray(value) ? value.filter((a): a is string => typeof a === 'string').map(clean) : [];
}

/** Commands that run another command (what they run is what counts), with their options that take a value. */
const wrappers: ReadonlyMap<string, readonly string[]> = new Map([
  ['sudo', ['-u', '-g', '-C', '-h', '-p', '-D', '-r', '-t', '-U', '-T', '--user', '--group', '--host', '--prompt', '--chdir']],
  ['doas', ['-u', '-C']],
  ['env', ['-u', '-C', '-S', '--unset', '--chdir', '--split-string']],
  ['nice', ['-n', '--adjustment']],
  ['nohup', []],
  ['time', ['-f', '-o', '--format', '--output']],
  ['timeout', ['-s', '-k', '--signal', '--kill-after']],
  ['stdbuf', ['-i', '-o', '-e']],
  ['ionice', ['-c', '-n', '-p', '-t']],
  ['chrt', ['-p']],
  ['xargs', ['-n', '-I', '-i', '-d', '-L', '-l', '-P', '-s', '-E', '-e', '-a', '--max-args', '--replace', '--delimiter', '--max-lines', '--max-procs', '--max-chars', '--arg-file']],
  ['busybox', []],
  ['command', []],
  ['exec', ['-a']],
  ['setsid', []],
]);

function nameOf(word: string): string {
  return basenamePosix(word).toLowerCase();
}

/**
 * Every simple command an argv would run: the command itself once wrappers
 * (`sudo`, `env X=1`, `xargs`, `timeout 5` …) are peeled off, plus what
 * `find -exec/-execdir/-ok` runs.
 */
function simpleCommands(words: readonly string[], depth = 0): string[][] {
  if (depth > 8 || words.length === 0) return [];
  let rest = [...words];
  for (let wrapper = wrappers.get(nameOf(rest[0] ?? '')); wrapper !== undefined; wrapper = wrappers.get(nameOf(rest[0] ?? ''))) {
    rest = rest.slice(1);
    // Options (with their values), assignments and numbers (a timeout, a priority) before the wrapped command.
    while (rest.length > 0 && /^(-|[A-Za-z_][A-Za-z0-9_]*=|\d+(\.\d+)?[smhd]?$)/.test(rest[0]!)) {
      const option = rest[0]!;
      rest = rest.slice(wrapper.includes(option) ? 2 : 1);
    }
  }
  if (rest.length === 0) return [];
  const found = [rest];
  if (nameOf(rest[0]!) === 'find') {
    rest.forEach((word, i) => {
      if (!['-exec', '-execdir', '-ok', '-okdir'].includes(word)) return;
      const tail = rest.slice(i + 1);
      const end = tail.findIndex((w) => w === ';' || w === '+' || w === '\\;');
      found.push(...simpleCommands(end < 0 ? tail : tail.slice(0, end), depth + 1));
    });
  }
  return found;
}

function commands(args: unknown): string[][] {
  return simpleCommands(argv(args));
}

function runs(args: unknown, name: string): string[][] {
  return commands(args).filter((c) => nameOf(c[0]!) === name);
}

function stringArg(args: unknown, name: string): string | undefined {
  const value = (args as Record<string, unknown> | null)?.[name];
  return typeof value === 'string' ? value : undefined;
}

const wildcard = /[*?[\]{}]/;

function octalMode(args: unknown): number | undefined {
  const mode = stringArg(args, 'mode');
  return mode !== undefined && /^[0-7]{3,4}$/.test(mode) ? Number.parseInt(mode, 8) : undefined;
}

/** Mode operands given to `chmod` commands (the first word after the options). */
function chmodModes(args: unknown): string[] {
  return runs(args, 'chmod').flatMap((c) => {
    const mode = c.slice(1).find((w) => !w.startsWith('-') || /^-[rwxXst]+$/.test(w));
    return mode === undefined ? [] : [mode];
  });
}

/** Symbolic clauses `who op perms`; copying another class's bits (`o=u`) counts as granting them. */
function symbolicGrants(mode: string, classes: RegExp, bits: RegExp): boolean {
  return mode.split(',').some((clause) => {
    const m = /^([ugoa]*)([-+=])([rwxXstugo]*)$/.exec(clause);
    if (m === null) return false;
    const [, who, op, perms] = m as unknown as [string, string, string, string];
    return op !== '-' && (who === '' || classes.test(who)) && (bits.test(perms) || /[ugo]/.test(perms));
  });
}

function grants(mode: string, numeric: number, classes: RegExp, bits: RegExp): boolean {
  if (/^[0-7]{3,4}$/.test(mode)) return (Number.parseInt(mode, 8) & numeric) !== 0;
  return symbolicGrants(mode, classes, bits);
}

function hostAllowed(host: string, allowed: readonly string[]): boolean {
  const h = host.toLowerCase();
  return allowed.some((pattern) => {
    const p = pattern.toLowerCase();
    return p.startsWith('*.') ? h.endsWith(p.slice(1)) || h === p.slice(2) : h === p;
  });
}

/**
 * Whether `normalizePosix` would return this absolute path as it is (no
 * empty, `.` or `..` segment, no trailing slash), as paths the gate has
 * canonicalized are: then there is nothing to resolve.
 */
export function isNormalAbsolute(path: string): boolean {
  if (path === '/') return true;
  return path.startsWith('/') && !path.endsWith('/') && !/\/\.{0,2}(?=\/|$)/.test(path);
}

// eslint-disable-next-line airlock/no-module-state -- keyed by a job's own roots array, holding only what is computed from it
const rootsSeen = new WeakMap<readonly string[], ReadonlyArray<{ path: string; prefix: string }>>();

/**
 * The roots normalized, each with the prefix a place inside it starts with:
 * `isInside` for a normalized place, without normalizing every root for
 * every target of every call.
 */
function rootPrefixes(roots: readonly string[]): ReadonlyArray<{ path: string; prefix: string }> {
  let known = rootsSeen.get(roots);
  if (known === undefined) {
    known = roots.map((root) => {
      const path = normalizePosix(root);
      return { path, prefix: path === '/' ? '/' : `${path}/` };
    });
    rootsSeen.set(roots, known);
  }
  return known;
}

const detectors: Record<DetectorName, (input: DetectorInput) => boolean> = {
  recursive_delete: ({ category, args }) => {
    if (category === 'delete' && (args as { recursive?: unknown })?.recursive === true) return true;
    // GNU accepts any unambiguous prefix of a long option: `--rec` is `--recursive`.
    const recursiveFlag = (w: string) => /^-[a-zA-Z]*[rR]/.test(w) || (w.length >= 3 && '--recursive'.startsWith(w));
    return (
      runs(args, 'rm').some((c) => c.slice(1).some(recursiveFlag)) || runs(args, 'find').some((c) => c.includes('-delete'))
    );
  },
  wildcard_delete: ({ category, targets, args }) => {
    if (category === 'delete' && targets.some((t) => wildcard.test(clean(t)))) return true;
    // `{}` is find's placeholder for one name, not a pattern.
    return runs(args, 'rm').some((c) => c.slice(1).some((w) => !w.startsWith('-') && w !== '{}' && wildcard.test(w)));
  },
  permission_change: ({ toolName, args }) => toolName === 'fs_chmod' || runs(args, 'chmod').length > 0,
  ownership_change: ({ args }) => runs(args, 'chown').length > 0 || runs(args, 'chgrp').length > 0,
  world_writable: ({ toolName, args }) => {
    const mode = octalMode(args);
    if (toolName === 'fs_chmod' && mode !== undefined) return (mode & 0o002) !== 0;
    return chmodModes(args).some((m) => grants(m, 0o002, /[oa]/, /w/));
  },
  setuid: ({ toolName, args }) => {
    const mode = octalMode(args);
    if (toolName === 'fs_chmod' && mode !== undefined) return (mode & 0o6000) !== 0;
    return chmodModes(args).some((m) => (/^[0-7]{3,4}$/.test(m) ? grants(m, 0o6000, /./, /s/) : /[+=][rwxXt]*s/.test(m)));
  },
  mode_widening: ({ toolName, args, targets, facts }) => {
    const mode = octalMode(args);
    const target = targets[0];
    if (toolName !== 'fs_chmod' || mode === undefined || target === undefined) return false;
    const current = factOf(facts, target)?.mode;
    if (current === undefined) return false;
    return (mode & ~Number.parseInt(current, 8) & 0o7777) !== 0;
  },
  outside_roots: ({ targets, settings }) => {
    if (settings.roots.length === 0) return false;
    const first = settings.roots[0]!;
    // The raw text: a look-alike slash is not a separator to the file system, so it must not be one here.
    const roots = rootPrefixes(settings.roots);
    return targets.some((t) => {
      const place = isNormalAbsolute(t) ? t : resolvePosix(first, t);
      return !roots.some((root) => place === root.path || place.startsWith(root.prefix));
    });
  },
  symlink_path: ({ facts }) => facts?.targets.some((t) => t.symlink) ?? false,
  // A file with other names: what changes through this one changes under all of them, wherever they are.
  hard_link: ({ category, facts }) => category === 'file_change' && (facts?.targets.some((t) => (t.links ?? 1) > 1) ?? false),
  // An upstream MCP server's tool that is not declared read-only: airlock cannot see what it would change.
  upstream_change: ({ toolName, category }) => toolName.startsWith('mcp_') && category !== 'read',
  external_send: ({ toolName, category, args, settings }) => {
    if (category !== 'network' && category !== 'external_send') return false;
    // An upstream MCP server sends wherever it sends: a `url` it is given says nothing airlock can check, so no host allows it.
    if (toolName.startsWith('mcp_')) return true;
    const url = stringArg(args, 'url');
    if (url === undefined) return true;
    try {
      return !hostAllowed(new URL(url).hostname, settings.allowedHosts);
    } catch {
      return true;
    }
  },
  denied_command: ({ category, args, settings, facts, factsMissing }) => {
    if (category !== 'command_execution') return false;
    const denied = new Set(settings.deniedCommands.map((c) => c.toLowerCase()));
    // What really runs, by every name of its file (a link named "cleanup" to dd is dd), and the spelling as well.
    // Asked and not answered (the tools side could not be reached): the worst is assumed, the program may be one of them.
    if (factsMissing === true) return true;
    const byProgram = facts?.programs?.some((p) => p.names.some((n) => denied.has(n.toLowerCase()))) ?? false;
    return byProgram || commands(args).some((c) => denied.has(nameOf(c[0]!)));
  },
  destroys_data: ({ toolName, category, args, facts }) => {
    if (category === 'delete' || toolName === 'fs_chmod') return true;
    if (runs(args, 'chmod').length + runs(args, 'chown').length + runs(args, 'chgrp').length > 0) return true;
    if (destructiveCommands.some((name) => runs(args, name).length > 0)) return true;
    const replaced = replacedTarget(toolName, args);
    // An unknown target is assumed to exist: only a fact that it does not lets the call through as a creation.
    return replaced !== undefined && (factOf(facts, replaced)?.exists ?? true);
  },
};

/** Commands whose whole purpose is to remove or overwrite data. */
const destructiveCommands = ['rm', 'rmdir', 'unlink', 'shred', 'truncate', 'wipefs'];

/** The existing target a call would replace or truncate, if it is one that can. */
export function replacedTarget(toolName: string, args: unknown): string | undefined {
  if (toolName === 'fs_write' && stringArg(args, 'mode') === 'overwrite') return stringArg(args, 'path');
  if (toolName === 'fs_move' && (args as { overwrite?: unknown } | null)?.overwrite === true) return stringArg(args, 'to');
  return undefined;
}

export function detect(name: DetectorName, input: DetectorInput): boolean {
  return detectors[name](input);
}

/** Every detector that fires for a call, in a stable order. */
export function detectAll(input: DetectorInput): DetectorName[] {
  return detectorNames.filter((name) => detectors[name](input));
}
