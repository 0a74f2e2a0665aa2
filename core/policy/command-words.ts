import { basenamePosix, normalizePosix } from '../util/posix-path';

/** What detectors read from a call's arguments: a command line's words and the commands it runs, a mode's grants, a host against its allow list, the roots' prefixes. */

// Zero-width and other format characters would let "r\u200bm" pass for another word.
// eslint-disable-next-line airlock/no-module-state -- used only by String#replace, which starts at 0 and leaves lastIndex at 0
const invisible = /[\p{Cf}]/gu;

export function clean(text: string): string {
  return text.normalize('NFKC').replace(invisible, '');
}

export function argv(args: unknown): string[] {
  const value = (args as { argv?: unknown })?.argv;
  return Array.isArray(value) ? value.filter((a): a is string => typeof a === 'string').map(clean) : [];
}

/** Commands that run another command (what they run is what counts), with their options that take a value. */
export const wrappers: ReadonlyMap<string, readonly string[]> = new Map([
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

export function nameOf(word: string): string {
  return basenamePosix(word).toLowerCase();
}

/**
 * Every simple command an argv would run: the command itself once wrappers
 * (`sudo`, `env X=1`, `xargs`, `timeout 5` …) are peeled off, plus what
 * `find -exec/-execdir/-ok` runs.
 */
export function simpleCommands(words: readonly string[], depth = 0): string[][] {
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

export function commands(args: unknown): string[][] {
  return simpleCommands(argv(args));
}

export function runs(args: unknown, name: string): string[][] {
  return commands(args).filter((c) => nameOf(c[0]!) === name);
}

export function stringArg(args: unknown, name: string): string | undefined {
  const value = (args as Record<string, unknown> | null)?.[name];
  return typeof value === 'string' ? value : undefined;
}

export const wildcard = /[*?[\]{}]/;

export function octalMode(args: unknown): number | undefined {
  const mode = stringArg(args, 'mode');
  return mode !== undefined && /^[0-7]{3,4}$/.test(mode) ? Number.parseInt(mode, 8) : undefined;
}

/** Mode operands given to `chmod` commands (the first word after the options). */
export function chmodModes(args: unknown): string[] {
  return runs(args, 'chmod').flatMap((c) => {
    const mode = c.slice(1).find((w) => !w.startsWith('-') || /^-[rwxXst]+$/.test(w));
    return mode === undefined ? [] : [mode];
  });
}

/** Symbolic clauses `who op perms`; copying another class's bits (`o=u`) counts as granting them. */
export function symbolicGrants(mode: string, classes: RegExp, bits: RegExp): boolean {
  return mode.split(',').some((clause) => {
    const m = /^([ugoa]*)([-+=])([rwxXstugo]*)$/.exec(clause);
    if (m === null) return false;
    const [, who, op, perms] = m as unknown as [string, string, string, string];
    return op !== '-' && (who === '' || classes.test(who)) && (bits.test(perms) || /[ugo]/.test(perms));
  });
}

export function grants(mode: string, numeric: number, classes: RegExp, bits: RegExp): boolean {
  if (/^[0-7]{3,4}$/.test(mode)) return (Number.parseInt(mode, 8) & numeric) !== 0;
  return symbolicGrants(mode, classes, bits);
}

export function hostAllowed(host: string, allowed: readonly string[]): boolean {
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
export const rootsSeen = new WeakMap<readonly string[], ReadonlyArray<{ path: string; prefix: string }>>();

/**
 * The roots normalized, each with the prefix a place inside it starts with:
 * `isInside` for a normalized place, without normalizing every root for
 * every target of every call.
 */
export function rootPrefixes(roots: readonly string[]): ReadonlyArray<{ path: string; prefix: string }> {
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
