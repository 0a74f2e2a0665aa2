import { z } from 'zod';
import type { Availability } from '../../tools/tool-host';
import { machineNameSchema, type MachineTable } from '../../tools/machines';
import { normalizePosix, isInside } from '../../util/posix-path';
import { commandsConfigSchema } from './commands';
import { hostsConfigSchema } from './hosts';
import { mcpConfigSchema } from './mcp';
import { servicesConfigSchema } from './services';

/**
 * The tools config file (AIRLOCK_TOOLS_CONFIG): everything the tools may
 * touch, in one place. What is not listed does not exist for the tools,
 * and a tool that needs something not listed is not offered to the model.
 * One machine lists its roots, services, hosts and commands at the top;
 * several list them under `machines:`, one section per machine, and each
 * machine's tools worker (AIRLOCK_MACHINE) lends only its own.
 */

const rootsSchema = z.array(z.string().startsWith('/', 'expected an absolute folder, e.g. /srv/share')).min(1, 'list at least one folder, or leave roots out');

/**
 * Which roots keep file changes for undo, and for how long: a delete there
 * moves the entry into the root's holding folder instead of removing it.
 */
const SIZE_UNITS: Readonly<Record<string, number>> = { B: 1, KiB: 1024, MiB: 1024 ** 2, GiB: 1024 ** 3, TiB: 1024 ** 4 };

/** How much a root may keep for undo: a size ("20GiB") or a share of its file system ("10%"). */
export const undoQuotaSchema = z
  .string()
  .regex(/^(\d+(\.\d+)?)\s*(%|B|KiB|MiB|GiB|TiB)$/, 'quota must be a size such as "20GiB" or a share of the file system such as "10%"')
  .transform((text): UndoQuota => {
    const [, amount = '0', , unit = 'B'] = /^(\d+(\.\d+)?)\s*(%|B|KiB|MiB|GiB|TiB)$/.exec(text) ?? [];
    return unit === '%' ? { percent: Math.min(100, Number(amount)) } : { bytes: Math.round(Number(amount) * (SIZE_UNITS[unit] ?? 1)) };
  });
export type UndoQuota = { readonly percent: number; readonly bytes?: undefined } | { readonly bytes: number; readonly percent?: undefined };

export const undoConfigSchema = z.strictObject({
  /** Roots (as listed in `roots`, or in AIRLOCK_ROOTS) whose changes are kept; default: every root. */
  roots: rootsSchema.optional(),
  keepDays: z.number().int('keepDays must be a whole number of days').min(1, 'keepDays must be 1 to 365').max(365, 'keepDays must be 1 to 365').default(7),
  /** What each root may keep at once; a change past it is not kept (its card says so). Default: the smaller of 10 % of the root's file system and 20 GiB. */
  quota: undoQuotaSchema.optional(),
});
export type UndoConfig = z.output<typeof undoConfigSchema>;

/** What one machine's tools may touch. */
export const machineSectionSchema = z.strictObject({
  /** Folders the file tools may touch (instead of AIRLOCK_ROOTS). */
  roots: rootsSchema.optional(),
  /** File changes kept for `airlock undo` (absent: none are). */
  undo: undoConfigSchema.optional(),
  services: servicesConfigSchema.optional(),
  hosts: hostsConfigSchema.optional(),
  commands: commandsConfigSchema.optional(),
});
export type MachineSection = z.output<typeof machineSectionSchema>;

const machinesSchema = z
  .record(machineNameSchema, machineSectionSchema, {
    error: (issue) => (issue.code === 'invalid_key' ? `${JSON.stringify(issue.input)}: expected a machine name of lowercase letters, digits and "-", e.g. nas` : undefined),
  })
  .refine((m) => Object.keys(m).length > 0, 'list at least one machine, or leave machines out')
  .superRefine((machines, ctx) => {
    // Every target has one owner: no folder, service or command on two machines.
    const entries = Object.entries(machines);
    entries.forEach(([name, m], i) => {
      for (const [other, o] of entries.slice(i + 1)) {
        for (const root of m.roots ?? []) {
          const clash = (o.roots ?? []).find((r) => isInside(r, root) || isInside(root, r));
          if (clash !== undefined) ctx.addIssue({ code: 'custom', path: [name, 'roots'], message: `${root} overlaps ${clash} of machine ${other}; a folder belongs to one machine` });
        }
        for (const service of Object.keys(m.services ?? {})) {
          if (o.services?.[service] !== undefined) ctx.addIssue({ code: 'custom', path: [name, 'services', service], message: `machine ${other} lists a service of the same name; give each its own name` });
        }
        for (const command of Object.keys(m.commands ?? {})) {
          if (o.commands?.[command] !== undefined) ctx.addIssue({ code: 'custom', path: [name, 'commands', command], message: `machine ${other} lists a command of the same name; give each its own name` });
        }
      }
    });
  });

export const toolsConfigSchema = z
  .strictObject({
    version: z.literal(1, 'expected version: 1'),
    ...machineSectionSchema.shape,
    /** Several machines, each with its own tools worker; instead of the sections above. */
    machines: machinesSchema.optional(),
    /** Upstream MCP servers whose tools are gated like airlock's own (one machine only, for now). */
    mcp: mcpConfigSchema.optional(),
  })
  .superRefine((c, ctx) => {
    if (c.machines === undefined) return;
    if (c.mcp !== undefined) ctx.addIssue({ code: 'custom', path: ['mcp'], message: 'mcp servers work with one machine only: leave machines out, or leave mcp out' });
    for (const key of ['roots', 'undo', 'services', 'hosts', 'commands'] as const) {
      // `services` defaults to {}: listed means not empty.
      const listed = key === 'services' ? Object.keys(c.services ?? {}).length > 0 : c[key] !== undefined;
      if (listed) ctx.addIssue({ code: 'custom', path: [key], message: `with machines listed, ${key} go under each machine (machines.<name>.${key})` });
    }
  });
export type ToolsConfig = z.output<typeof toolsConfigSchema>;

/** Which capabilities a section grants: files always (the roots default to a sandbox folder), the rest when listed. */
export function availabilityOf(config: MachineSection | undefined): Availability {
  return {
    files: true,
    services: Object.keys(config?.services ?? {}).length > 0,
    http: (config?.hosts?.allow.length ?? 0) + (config?.hosts?.allowInternal.length ?? 0) > 0,
    commands: Object.keys(config?.commands ?? {}).length > 0,
  };
}

/** What any machine grants: a tool is offered when some machine can run it. */
export function unionAvailability(sections: readonly MachineSection[]): Availability {
  const each = sections.map(availabilityOf);
  return {
    files: true,
    services: each.some((a) => a.services),
    http: each.some((a) => a.http),
    commands: each.some((a) => a.commands),
  };
}

/** The routing table a job's snapshot freezes; undefined for a single-machine config. */
export function machineTableOf(config: ToolsConfig | undefined): MachineTable | undefined {
  if (config?.machines === undefined) return undefined;
  return Object.entries(config.machines).map(([name, m]) => ({
    name,
    roots: (m.roots ?? []).map(normalizePosix),
    services: Object.keys(m.services ?? {}),
    commands: Object.keys(m.commands ?? {}),
    hosts: [...(m.hosts?.allow ?? []), ...(m.hosts?.allowInternal ?? [])],
  }));
}
