import { z } from 'zod';
import { getTool, upstreamToolsInUse } from './registry';

export interface ToolSpec {
  readonly name: string;
  readonly description: string;
  readonly parameters: Record<string, unknown>;
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
    const { $schema: _ignored, ...parameters } = z.toJSONSchema(tool.parameters, { io: 'input' }) as Record<string, unknown>;
    return { name: tool.name, description: tool.description, parameters };
  });
}
