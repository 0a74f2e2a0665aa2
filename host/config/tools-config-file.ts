import { resolve } from 'node:path';
import type { z } from 'zod';
import type { AirlockConfig } from '../../core/config/config';
import { AirlockError } from '../../core/util/errors';
import {
  availabilityOf,
  machineTableOf,
  toolsConfigSchema,
  unionAvailability,
  type MachineSection,
  type ToolsConfig,
} from '../../core/config/tools/tools-config';
import type { MachineTable } from '../../core/tools/machines';
import type { SnapshotSettings } from '../../core/policy/snapshot';
import { availableToolNames } from '../../core/tools/registry';
import type { Availability } from '../../core/tools/tool-host';
import type { UpstreamToolSpec } from '../../core/tools/upstream/upstream-spec';
import { statePaths } from './paths';
import type { UndoSettings } from '../tools/undo-settings';
import { readYamlFile } from './read-yaml';

export interface ToolsConfigProblem {
  /** Where in the file, e.g. `services.jellyfin.container`; `(file)` for the file as a whole. */
  readonly field: string;
  readonly message: string;
}

/** The tools config file is unreadable or invalid; nothing of it is used. */
export class ToolsConfigError extends AirlockError {
  override name = 'ToolsConfigError';
  constructor(
    readonly file: string,
    readonly problems: readonly ToolsConfigProblem[],
    cause?: unknown,
  ) {
    super(
      `tools config ${file} (AIRLOCK_TOOLS_CONFIG) is invalid: ${problems.map((p) => `${p.field}: ${p.message}`).join('; ')}. ` +
        'Fix the file (docs/configuration.md shows an example) or unset AIRLOCK_TOOLS_CONFIG',
      { cause },
    );
  }
}

function fieldOf(path: readonly PropertyKey[]): string {
  return path.length === 0 ? '(top level)' : path.map(String).join('.');
}

function problemsOf(error: z.ZodError): ToolsConfigProblem[] {
  return error.issues.slice(0, 10).map((issue) => {
    // An unknown key names itself: a typo ("service:") says which key it was.
    if (issue.code === 'unrecognized_keys') return { field: fieldOf(issue.path), message: `unknown field(s) ${issue.keys.join(', ')}` };
    if (issue.code === 'invalid_key') return { field: fieldOf(issue.path), message: `bad name: ${issue.issues[0]?.message ?? issue.message}` };
    return { field: fieldOf(issue.path), message: issue.message };
  });
}

/** Validates a parsed tools config as a whole: it loads completely or not at all. */
export function parseToolsConfig(raw: unknown, file: string): ToolsConfig {
  const result = toolsConfigSchema.safeParse(raw);
  if (!result.success) throw new ToolsConfigError(file, problemsOf(result.error));
  return result.data;
}

/** YAML or JSON (JSON is YAML). */
export async function readToolsConfig(file: string): Promise<ToolsConfig> {
  const read = await readYamlFile(file);
  if (!read.ok) throw new ToolsConfigError(file, [{ field: '(file)', message: read.problem }], read.cause);
  return parseToolsConfig(read.value, file);
}

/** What the tools may touch, from AIRLOCK_TOOLS_CONFIG and AIRLOCK_ROOTS, as the agent sees it: every machine at once. */
export interface ToolsSetup {
  readonly file: string | undefined;
  readonly config: ToolsConfig | undefined;
  /** Absolute folders: the tools config's `roots` (every machine's), else AIRLOCK_ROOTS, else the data folder's sandbox. */
  readonly roots: readonly string[];
  /** What some machine grants. */
  readonly availability: Availability;
  /** The tools this configuration can run, in registry order (then the upstream MCP servers' tools). */
  readonly availableTools: readonly string[];
  /** The upstream MCP servers' tools, once listed (`withUpstreamTools`); none before. */
  readonly upstreamTools: readonly UpstreamToolSpec[];
  /** Which machine owns what, when the file lists `machines:`; frozen into every job's snapshot to route its calls. */
  readonly machines: MachineTable | undefined;
}

/** What one tools worker lends: its machine's section of the tools config. */
export interface MachineSetup {
  /** AIRLOCK_MACHINE; undefined for a single-machine config. */
  readonly machine: string | undefined;
  /** The section the tools lend (the whole file for a single machine). */
  readonly section: MachineSection | undefined;
  readonly roots: readonly string[];
  /** Whether the roots came from a file (else AIRLOCK_ROOTS or the sandbox). */
  readonly rootsFrom: string;
  readonly availability: Availability;
}

/**
 * Read by the agent worker (the tools it offers, the roots its detectors
 * know, the machines it routes to) and the tools worker (what it lends
 * the tools, see `machineSetup`) alike, so both see the same configuration.
 */
export async function loadToolsSetup(config: AirlockConfig): Promise<ToolsSetup> {
  const paths = statePaths(config);
  const file = config.toolsConfigFile === undefined ? undefined : resolve(config.toolsConfigFile);
  const tools = file === undefined ? undefined : await readToolsConfig(file);
  if (file !== undefined && (tools?.roots !== undefined || tools?.machines !== undefined) && config.roots !== undefined) {
    throw new ToolsConfigError(file, [
      { field: 'roots', message: 'roots are also set in AIRLOCK_ROOTS; keep them in one place (remove roots from the file or unset AIRLOCK_ROOTS)' },
    ]);
  }
  const sections = tools?.machines === undefined ? [tools] : Object.values(tools.machines);
  const availability = tools?.machines === undefined ? availabilityOf(tools) : unionAvailability(Object.values(tools.machines));
  const fileRoots = tools?.machines === undefined ? tools?.roots : sections.flatMap((s) => s?.roots ?? []);
  return {
    file,
    config: tools,
    roots: fileRoots !== undefined && fileRoots.length > 0 ? fileRoots.map((r) => resolve(r)) : paths.roots,
    availability,
    availableTools: availableToolNames(availability),
    upstreamTools: [],
    machines: machineTableOf(tools),
  };
}

/** The setup with the upstream MCP servers' tools, as listed by this process, offered after airlock's own. */
export function withUpstreamTools(setup: ToolsSetup, specs: readonly UpstreamToolSpec[]): ToolsSetup {
  return { ...setup, availableTools: [...setup.availableTools, ...specs.map((s) => s.name)], upstreamTools: [...specs] };
}

/**
 * One tools worker's part: with `machines:` in the file, the section of
 * AIRLOCK_MACHINE, which must name one of them; without, the whole file,
 * and AIRLOCK_MACHINE must be unset. Either mistake stops the worker at
 * start-up, so no worker ever polls a queue nobody routes to.
 */
export function machineSetup(setup: ToolsSetup, config: AirlockConfig): MachineSetup {
  const { file, config: tools } = setup;
  const names = Object.keys(tools?.machines ?? {});
  if (tools?.machines === undefined || file === undefined) {
    if (config.machine !== undefined) {
      throw new ToolsConfigError(file ?? '(none)', [
        { field: 'machines', message: `AIRLOCK_MACHINE=${config.machine} is set but the tools config lists no machines; list it under machines: or unset AIRLOCK_MACHINE` },
      ]);
    }
    const fromFile = tools?.roots !== undefined;
    return {
      machine: undefined,
      section: tools,
      roots: setup.roots,
      rootsFrom: fromFile ? `${file ?? 'tools config'}: roots` : 'AIRLOCK_ROOTS',
      availability: setup.availability,
    };
  }
  const section = config.machine === undefined ? undefined : tools.machines[config.machine];
  if (config.machine === undefined || section === undefined) {
    const problem = config.machine === undefined ? 'AIRLOCK_MACHINE is not set' : `AIRLOCK_MACHINE=${config.machine} is not one of them`;
    throw new ToolsConfigError(file, [
      { field: 'machines', message: `the file lists machines ${names.join(', ')} and ${problem}; set AIRLOCK_MACHINE to the machine this tools worker runs on` },
    ]);
  }
  return {
    machine: config.machine,
    section,
    roots: section.roots?.map((r) => resolve(r)) ?? statePaths(config).roots,
    rootsFrom: section.roots !== undefined ? `${file}: machines.${config.machine}.roots` : 'AIRLOCK_ROOTS',
    availability: availabilityOf(section),
  };
}

/** What a job's policy snapshot takes from the configuration: the roots its detectors know, the tools it may offer, the machines it routes to, the judge. */
export function snapshotSettingsOf(config: AirlockConfig, setup: ToolsSetup): SnapshotSettings {
  return {
    roots: setup.roots,
    judgeModel: config.judge.model,
    judgeTimeoutMs: config.judge.timeoutMs,
    availableTools: setup.availableTools,
    ...(setup.upstreamTools.length > 0 ? { upstreamTools: setup.upstreamTools } : {}),
    ...(setup.machines !== undefined ? { machines: setup.machines } : {}),
    ...(config.notify.approvalPageUrl !== undefined ? { approvalPageUrl: config.notify.approvalPageUrl } : {}),
  };
}

/**
 * The tools config's `undo` for this machine, as the file tools use it:
 * its roots as the real paths of configured roots. A folder under `undo`
 * that is not one of the roots stops the worker with one line naming it.
 */
export function undoSettingsOf(setup: ToolsSetup, local: MachineSetup, roots: { readonly configured: readonly string[]; readonly real: readonly string[] }): UndoSettings | undefined {
  const undo = local.section?.undo;
  if (undo === undefined) return undefined;
  const field = local.machine === undefined ? 'undo.roots' : `machines.${local.machine}.undo.roots`;
  const real = (undo.roots ?? roots.configured).map((folder) => {
    const i = roots.configured.indexOf(resolve(folder));
    const found = i < 0 ? undefined : roots.real[i];
    if (found === undefined) throw new ToolsConfigError(setup.file ?? '(none)', [{ field, message: `${folder} is not one of the roots (${roots.configured.join(', ')}); list only roots there` }]);
    return found;
  });
  return { roots: real, keepDays: undo.keepDays, ...(undo.quota !== undefined ? { quota: undo.quota } : {}) };
}
