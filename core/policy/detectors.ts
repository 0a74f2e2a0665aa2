import { type CallFacts, factOf } from '../tools/facts';
import type { ToolCategory } from '../tools/registry';
import { resolvePosix } from '../util/posix-path';
import { chmodModes, clean, commands, grants, hostAllowed, isNormalAbsolute, nameOf, octalMode, rootPrefixes, runs, stringArg, wildcard } from './command-words';

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
