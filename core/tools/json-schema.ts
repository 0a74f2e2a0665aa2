import { z } from 'zod';
import { getTool, upstreamToolsInUse } from './registry';
import type { AnyTool } from './tool-module';

export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  readonly parameters: Record<string, unknown>;
}

/**
 * A module's parameters as JSON Schema, made once per module: the schema
 * never changes, and converting it on every model turn cost about 1.5 ms of
 * the agent worker's CPU per turn (a CPU profile of `npm run bench -- --only parked`).
 */
// eslint-disable-next-line airlock/no-module-state -- keyed by a tool module, holding only what is computed from its schema
const parameterSchemas = new WeakMap<AnyTool, Readonly<Record<string, unknown>>>();

function parametersOf(tool: AnyTool): Readonly<Record<string, unknown>> {
  const known = parameterSchemas.get(tool);
  if (known !== undefined) return known;
  const { $schema: _ignored, ...parameters } = z.toJSONSchema(tool.parameters, { io: 'input' }) as Record<string, unknown>;
  parameterSchemas.set(tool, parameters);
  return parameters;
}

/** Function specs for the model, generated from the same zod schemas that validate the calls. */
export function toolSpecs(names: readonly string[]): ToolSpec[] {
  return names.map((name) => {
    const tool = getTool(name);
    if (tool === undefined) throw new Error(`unknown tool ${name}`);
    // An upstream MCP server's tool is offered with the schema its server listed, as it listed it.
    const upstream = upstreamToolsInUse().find((s) => s.name === name);
    if (upstream !== undefined) {
      const { $schema: _dropped, ...listed } = upstream.inputSchema;
      return { name: tool.name, description: tool.description, parameters: { ...listed, type: 'object' } };
    }
    // A copy: the caller may add to its spec.
    return { name: tool.name, description: tool.description, parameters: structuredClone(parametersOf(tool)) };
  });
}
