/**
 * core/tools/ — The tools a job may call: one module per tool (zod
 * parameters, category, targets, prepare, revalidate, execute,
 * postcondition), written against the capabilities the tools worker lends it
 * (files, services, http, commands, journal); what a tool observed of its
 * targets; and the facts the tools side resolves for policy. This file is
 * the registry of those modules. A write's content preview is masked where
 * it is made (redaction), so no file content leaves the tools side unmasked.
 *
 * May import: util, redaction.
 */

import { normalizePosix, resolvePosix } from '../util/posix-path';
import { complete } from './complete';
import { fsChmod } from './fs/fs-chmod';
import { fsDelete } from './fs/fs-delete';
import { fsList } from './fs/fs-list';
import { fsMove } from './fs/fs-move';
import { fsMoveMany } from './fs/fs-move-many';
import { fsRead } from './fs/fs-read';
import { fsStat } from './fs/fs-stat';
import { fsUndo } from './fs/fs-undo';
import { fsWrite } from './fs/fs-write';
import { serviceRestart, serviceStart, serviceStop } from './services/service-actions';
import { commandRun } from './commands/command-run';
import { httpRequest } from './net/http-request';
import { serviceStatus } from './services/service-status';
import type { Availability } from './tool-host';
import { pathTargets, type AnyTool } from './tool-module';
import type { UpstreamToolSpec } from './upstream/upstream-spec';
import { upstreamTool } from './upstream/upstream-tool';

export { toolCategories, type ToolCategory, type ToolRisk, type AnyTool } from './tool-module';

/**
 * Every tool, in the order the model and `airlock rules test --tools` list
 * them. Adding a tool is adding its module here: its definition reaches
 * the model, policy and reviewers; its hooks run on the tools worker.
 */
const modules: readonly AnyTool[] = [
  fsList,
  fsRead,
  fsStat,
  fsWrite,
  fsMove,
  fsMoveMany,
  fsDelete,
  fsChmod,
  fsUndo,
  serviceStatus,
  serviceStart,
  serviceStop,
  serviceRestart,
  httpRequest,
  commandRun,
  complete,
];

export const COMPLETE_TOOL = complete.name;

export const toolDefinitions: ReadonlyMap<string, AnyTool> = new Map(modules.map((tool) => [tool.name, tool]));

/** Tools that run on the tools queue (everything but control tools). */
export const sideEffectToolNames: readonly string[] = modules.filter((t) => t.category !== 'control').map((t) => t.name);

/** Of these names, the tools a job gets when it names none (what only a job that asks for it by name gets is left out). */
export function offeredByDefault(names: readonly string[]): string[] {
  return names.filter((name) => getTool(name)?.askedForOnly !== true);
}

/**
 * Upstream MCP servers' tools in use here. Kept on the global object on
 * purpose: a workflow sandbox keeps its globals apart per workflow run, so
 * each job sees the tools its own snapshot froze (set when its state is
 * made); a worker or CLI process sets the tools it listed itself, once.
 */
const UPSTREAM_KEY = '__airlockUpstreamTools';

class UpstreamTools {
  constructor(readonly byName: ReadonlyMap<string, UpstreamToolSpec>) {}
}

function inUse(): UpstreamTools | undefined {
  const held: unknown = Reflect.get(globalThis, UPSTREAM_KEY);
  return held instanceof UpstreamTools ? held : undefined;
}

export function useUpstreamTools(specs: readonly UpstreamToolSpec[]): void {
  Reflect.set(globalThis, UPSTREAM_KEY, new UpstreamTools(new Map(specs.map((spec) => [spec.name, spec]))));
}

/** The upstream tools in use here (none until `useUpstreamTools`). */
export function upstreamToolsInUse(): UpstreamToolSpec[] {
  return [...(inUse()?.byName.values() ?? [])];
}

export function getTool(name: string): AnyTool | undefined {
  const builtIn = toolDefinitions.get(name);
  if (builtIn !== undefined || !name.startsWith('mcp_')) return builtIn;
  const spec = inUse()?.byName.get(name);
  return spec === undefined ? undefined : upstreamTool(spec);
}

/** The path arguments of a call of this tool (none for an unknown tool). */
export function pathTargetsOf(toolName: string, args: unknown): string[] {
  const tool = getTool(toolName);
  return tool === undefined ? [] : pathTargets(tool, args);
}

/** Every registered tool (control tools included), in registry order. */
export function allTools(): readonly AnyTool[] {
  return modules;
}

/** The tools a tools worker with these capabilities can run; the rest are never offered to the model. */
export function availableToolNames(availability: Availability): string[] {
  return sideEffectToolNames.filter((name) => getTool(name)?.needs.every((need) => availability[need]) === true);
}

/**
 * Path arguments in one canonical spelling: relative paths taken from the
 * first root, `.`/`..`/`//` folded. Rules, fingerprints, reviewers and tools
 * then all see the same text for the same place.
 */
export function canonicalArgs(tool: AnyTool, args: Record<string, unknown>, roots: readonly string[]): Record<string, unknown> {
  const canonical = (value: string) => (roots[0] === undefined ? normalizePosix(value) : resolvePosix(roots[0], value));
  if (tool.mapPaths !== undefined) {
    const mapped: unknown = tool.mapPaths(args, canonical);
    return typeof mapped === 'object' && mapped !== null && !Array.isArray(mapped) ? { ...mapped } : args;
  }
  if (tool.pathFields.length === 0) return args;
  const out = { ...args };
  for (const field of tool.pathFields) {
    const value = out[field];
    if (typeof value === 'string') out[field] = canonical(value);
  }
  return out;
}
