import { z } from 'zod';
import { inCidr, parseCidr, parseHostIp } from '../util/ip-address';
import { isInside } from '../util/posix-path';
import { getTool } from './registry';
import { pathTargets } from './tool-module';

/**
 * Which machine a call acts on. A tools config may describe several
 * machines (a NAS, a media box), each with its own roots, services,
 * commands and hosts; every call then belongs to the one machine that owns
 * its target and runs on that machine's tools worker. The table is frozen
 * into a job's policy snapshot, so the answer for a call never changes
 * during the job, and the workflow can ask it as often as it needs.
 */

/** A machine's name: also the suffix of its tools queue (`airlock-tools.<name>`). */
export const machineNameSchema = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]{0,39}$/, 'expected a machine name of lowercase letters, digits and "-" (at most 40), e.g. nas');

/** What one machine owns, as the agent routes by it: roots (absolute, normalized), service and command names, host patterns. */
export const machineEntrySchema = z.strictObject({
  name: machineNameSchema,
  roots: z.array(z.string()),
  services: z.array(z.string()),
  commands: z.array(z.string()),
  /** `hosts.allow` and `hosts.allowInternal` together. */
  hosts: z.array(z.string()),
});
export type MachineEntry = z.output<typeof machineEntrySchema>;

/** Every machine, in the tools config's order (the first whose hosts match owns a request). */
export const machineTableSchema = z.array(machineEntrySchema).min(1);
export type MachineTable = z.output<typeof machineTableSchema>;

export type Owner =
  /** One machine (no `machines:` in the tools config): the plain tools queue. */
  | { readonly kind: 'single' }
  | { readonly kind: 'machine'; readonly machine: string }
  /** No machine owns the target, or the call spans two: it is refused before anything runs. */
  | { readonly kind: 'none'; readonly reason: string };

function rootOwner(table: MachineTable, path: string): { machine: string; root: string } | undefined {
  let best: { machine: string; root: string } | undefined;
  for (const m of table) {
    for (const root of m.roots) {
      // The deepest root wins, should one machine's root lie inside another's.
      if (isInside(root, path) && (best === undefined || root.length > best.root.length)) best = { machine: m.name, root };
    }
  }
  return best;
}

function hostMatches(pattern: string, host: string): boolean {
  const p = pattern.toLowerCase();
  const h = host.toLowerCase().replace(/\.$/, '');
  const address = parseHostIp(h);
  if (p === '*') return true;
  const range = parseCidr(p.startsWith('[') && p.endsWith(']') ? p.slice(1, -1) : p);
  if (range !== undefined) return address !== undefined && inCidr(address, range);
  const name = p.replace(/\.$/, '');
  return name.startsWith('*.') ? h.endsWith(name.slice(1)) : h === name;
}

function hostOf(url: unknown): string | undefined {
  if (typeof url !== 'string' || !URL.canParse(url)) return undefined;
  return new URL(url).hostname;
}

function stringArg(args: unknown, key: string): string | undefined {
  if (typeof args !== 'object' || args === null) return undefined;
  const value: unknown = Reflect.get(args, key);
  return typeof value === 'string' ? value : undefined;
}

function listed(table: MachineTable, pick: (m: MachineEntry) => readonly string[]): string {
  return table.map((m) => `${m.name}: ${pick(m).join(', ') || 'none'}`).join('; ');
}

/** Names shown in a refusal stay short: a megabyte argument is not echoed back. */
function shown(value: string): string {
  return JSON.stringify(value.length > 200 ? `${value.slice(0, 200)}…` : value);
}

function byPaths(table: MachineTable, paths: readonly string[]): Owner {
  let owner: { machine: string; path: string } | undefined;
  for (const path of paths) {
    const found = rootOwner(table, path);
    if (found === undefined) return { kind: 'none', reason: `${shown(path)} is under no machine's roots (${listed(table, (m) => m.roots)})` };
    if (owner !== undefined && owner.machine !== found.machine) {
      return {
        kind: 'none',
        reason: `the call spans two machines: ${shown(owner.path)} is on ${owner.machine}, ${shown(path)} on ${found.machine}; one call acts on one machine`,
      };
    }
    owner ??= { machine: found.machine, path };
  }
  return owner === undefined ? { kind: 'none', reason: 'the call names no path to place it on a machine' } : { kind: 'machine', machine: owner.machine };
}

/**
 * The machine whose tools worker runs this call: the machine listing its
 * command, else its service, else (http) the first machine whose hosts
 * match, else the machine whose roots hold every path it names. A
 * command's folder must be on the command's machine. Arguments are the
 * canonical ones the gate evaluated.
 */
export function ownerOf(table: MachineTable | undefined, toolName: string, args: unknown): Owner {
  if (table === undefined) return { kind: 'single' };
  const tool = getTool(toolName);
  if (tool === undefined || tool.needs.length === 0) return { kind: 'none', reason: `${shown(toolName)} does not run on a machine` };
  if (tool.needs.includes('commands')) {
    const argv: unknown = typeof args === 'object' && args !== null ? Reflect.get(args, 'argv') : undefined;
    const program = Array.isArray(argv) && typeof argv[0] === 'string' ? argv[0] : '';
    const machine = table.find((m) => m.commands.includes(program));
    if (machine === undefined) return { kind: 'none', reason: `no machine lists the command ${shown(program)} (${listed(table, (m) => m.commands)})` };
    const paths = pathTargets(tool, args);
    if (paths.length > 0) {
      const where = byPaths(table, paths);
      if (where.kind === 'machine' && where.machine !== machine.name) {
        return { kind: 'none', reason: `the command ${shown(program)} is on ${machine.name} but its folder is on ${where.machine}` };
      }
      if (where.kind === 'none') return where;
    }
    return { kind: 'machine', machine: machine.name };
  }
  if (tool.needs.includes('services')) {
    const service = stringArg(args, 'service') ?? '';
    const machine = table.find((m) => m.services.includes(service));
    return machine === undefined
      ? { kind: 'none', reason: `no machine lists the service ${shown(service)} (${listed(table, (m) => m.services)})` }
      : { kind: 'machine', machine: machine.name };
  }
  if (tool.needs.includes('http')) {
    const host = hostOf(stringArg(args, 'url'));
    if (host === undefined) return { kind: 'none', reason: 'the URL names no host' };
    const machine = table.find((m) => m.hosts.some((pattern) => hostMatches(pattern, host)));
    return machine === undefined
      ? { kind: 'none', reason: `no machine's hosts allow ${shown(host)} (${listed(table, (m) => m.hosts)})` }
      : { kind: 'machine', machine: machine.name };
  }
  return byPaths(table, pathTargets(tool, args));
}

/** The machine a call runs on, or undefined for a single-machine setup (and for a call no machine owns, which never runs). */
export function machineOf(table: MachineTable | undefined, toolName: string, args: unknown): string | undefined {
  const owner = ownerOf(table, toolName, args);
  return owner.kind === 'machine' ? owner.machine : undefined;
}
