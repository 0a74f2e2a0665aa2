import { z } from 'zod';
import { getTool } from './registry';

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
    const { $schema: _ignored, ...parameters } = z.toJSONSchema(tool.parameters, { io: 'input' }) as Record<string, unknown>;
    return { name: tool.name, description: tool.description, parameters };
  });
}
