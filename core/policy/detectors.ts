import { basenamePosix, isInside, resolvePosix } from '../posix-path';
import type { ToolCategory } from '../tools/definitions';

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

/** What the agent side could observe of the call's targets; absent facts never fire a detector. */
export interface CallFacts {
  /** Targets whose path passes through a symbolic link. */
  readonly symlinks: readonly string[];
  /** Current permission bits (octal) of existing targets, by target as given. */
  readonly modes: Readonly<Record<string, string>>;
}

export interface DetectorInput {
  readonly toolName: string;
  readonly category: ToolCategory;
  readonly args: unknown;
  /** The paths the call acts on, as the model gave them. */
  readonly targets: readonly string[];
  readonly settings: DetectorSettings;
  readonly facts?: CallFacts | undefined;
}

// Zero-width and other format characters would let "r\u200bm" pass for another word.
const invisible = /[\p{Cf}]/gu;

function clean(text: string): string {
  return text.normalize('NFKC').replace(invisible, '');
}

function argv(args: unknown): string[] {
  const value = (args as { argv?: unknown })?.argv;
  return Array.isArray(value) ? value.filter((a): a is string => typeof a === 'string').map(clean) : [];
}

function command(args: unknown): string | undefined {
  const first = argv(args)[0];
  return first === undefined ? undefined : basenamePosix(first);
}

function stringArg(args: unknown, name: string): string | undefined {
  const value = (args as Record<string, unknown> | null)?.[name];
  return typeof value === 'string' ? clean(value) : undefined;
}

const wildcard = /[*?[\]{}]/;

function octalMode(args: unknown): number | undefined {
  const mode = stringArg(args, 'mode');
  return mode !== undefined && /^[0-7]{3,4}$/.test(mode) ? Number.parseInt(mode, 8) : undefined;
}

/** Modes given to a `chmod` command: numeric or symbolic. */
function chmodModes(args: unknown): string[] {
  const [cmd, ...rest] = argv(args);
  if (cmd === undefined || basenamePosix(cmd) !== 'chmod') return [];
  return rest.filter((a) => !a.startsWith('-') || /^-[rwxXst]+$/.test(a)).slice(0, 1);
}

function grantsBits(mode: string, bits: { numeric: number; symbolic: RegExp }): boolean {
  if (/^[0-7]{3,4}$/.test(mode)) return (Number.parseInt(mode, 8) & bits.numeric) !== 0;
  return bits.symbolic.test(mode);
}

const worldWrite = { numeric: 0o002, symbolic: /(^|,)[ugoa]*[ao][ugoa]*[+=][rwxXst]*w|(^|,)[+=][rwxXst]*w/ };
const setId = { numeric: 0o6000, symbolic: /(^|,)[ugoa]*[+=][rwxXt]*s/ };

function hostAllowed(host: string, allowed: readonly string[]): boolean {
  const h = host.toLowerCase();
  return allowed.some((pattern) => {
    const p = pattern.toLowerCase();
    return p.startsWith('*.') ? h.endsWith(p.slice(1)) || h === p.slice(2) : h === p;
  });
}

const detectors: Record<DetectorName, (input: DetectorInput) => boolean> = {
  recursive_delete: ({ category, args }) => {
    if (category === 'delete' && (args as { recursive?: unknown })?.recursive === true) return true;
    const words = argv(args);
    const cmd = command(args);
    if (cmd === 'rm') return words.slice(1).some((w) => /^-[a-zA-Z]*[rR]/.test(w) || w === '--recursive');
    if (cmd === 'find') return words.includes('-delete');
    return false;
  },
  wildcard_delete: ({ category, targets, args }) => {
    if (category === 'delete' && targets.some((t) => wildcard.test(clean(t)))) return true;
    return command(args) === 'rm' && argv(args).slice(1).some((w) => !w.startsWith('-') && wildcard.test(w));
  },
  permission_change: ({ toolName, args }) => toolName === 'fs_chmod' || command(args) === 'chmod',
  ownership_change: ({ args }) => ['chown', 'chgrp'].includes(command(args) ?? ''),
  world_writable: ({ toolName, args }) => {
    const mode = octalMode(args);
    if (toolName === 'fs_chmod' && mode !== undefined) return (mode & 0o002) !== 0;
    return chmodModes(args).some((m) => grantsBits(m, worldWrite));
  },
  setuid: ({ toolName, args }) => {
    const mode = octalMode(args);
    if (toolName === 'fs_chmod' && mode !== undefined) return (mode & 0o6000) !== 0;
    return chmodModes(args).some((m) => grantsBits(m, setId));
  },
  mode_widening: ({ toolName, args, targets, facts }) => {
    const mode = octalMode(args);
    const target = targets[0];
    if (toolName !== 'fs_chmod' || mode === undefined || target === undefined) return false;
    const current = facts?.modes[target];
    if (current === undefined) return false;
    return (mode & ~Number.parseInt(current, 8) & 0o7777) !== 0;
  },
  outside_roots: ({ targets, settings }) => {
    if (settings.roots.length === 0) return false;
    const first = settings.roots[0]!;
    return targets.some((t) => !settings.roots.some((root) => isInside(root, resolvePosix(first, clean(t)))));
  },
  symlink_path: ({ facts }) => (facts?.symlinks.length ?? 0) > 0,
  external_send: ({ category, args, settings }) => {
    if (category !== 'network' && category !== 'external_send') return false;
    const url = stringArg(args, 'url');
    if (url === undefined) return true;
    try {
      return !hostAllowed(new URL(url).hostname, settings.allowedHosts);
    } catch {
      return true;
    }
  },
  denied_command: ({ category, args, settings }) => {
    const cmd = command(args);
    return category === 'command_execution' && cmd !== undefined && settings.deniedCommands.includes(cmd);
  },
};

export function detect(name: DetectorName, input: DetectorInput): boolean {
  return detectors[name](input);
}

/** Every detector that fires for a call, in a stable order. */
export function detectAll(input: DetectorInput): DetectorName[] {
  return detectorNames.filter((name) => detectors[name](input));
}
