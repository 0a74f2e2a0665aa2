import { z } from 'zod';
import { normalizePosix, resolvePosix } from '../posix-path';

export const toolCategories = [
  'read',
  'file_change',
  'delete',
  'command_execution',
  'network',
  'external_send',
  'service_control',
  'control',
] as const;
export type ToolCategory = (typeof toolCategories)[number];

export type ToolRisk = 'low' | 'medium' | 'high';

export interface ToolDefinition<S extends z.ZodType = z.ZodType> {
  /** snake_case: OpenAI function names allow no dots. */
  readonly name: string;
  readonly description: string;
  readonly category: ToolCategory;
  readonly risk: ToolRisk;
  readonly parameters: S;
  /** Arguments that are paths, in the order the reviewer should see them. */
  readonly pathFields: readonly string[];
  /** The paths a call acts on (the values of `pathFields`). */
  readonly targets: (args: z.output<S>) => string[];
}

function defineTool<S extends z.ZodType>(definition: Omit<ToolDefinition<S>, 'targets'>): ToolDefinition<S> {
  return {
    ...definition,
    targets: (args) =>
      definition.pathFields.flatMap((field) => {
        const value = (args as Record<string, unknown>)[field];
        return typeof value === 'string' ? [value] : [];
      }),
  };
}

const path = z
  .string()
  .min(1, 'path must not be empty')
  .max(4096)
  .refine((p) => !p.includes('\0'), 'path must not contain NUL');

export const fsList = defineTool({
  name: 'fs_list',
  description: 'List the entries of a directory inside the allowed roots.',
  category: 'read',
  risk: 'low',
  parameters: z.strictObject({ path }),
  pathFields: ['path'],
});

export const fsRead = defineTool({
  name: 'fs_read',
  description: 'Read a text file inside the allowed roots (UTF-8, truncated to maxBytes).',
  category: 'read',
  risk: 'low',
  parameters: z.strictObject({ path, maxBytes: z.number().int().min(1).max(1_048_576).default(65_536) }),
  pathFields: ['path'],
});

export const fsStat = defineTool({
  name: 'fs_stat',
  description: 'Describe a file or directory inside the allowed roots: type, size, mode, modification time.',
  category: 'read',
  risk: 'low',
  parameters: z.strictObject({ path }),
  pathFields: ['path'],
});

export const fsWrite = defineTool({
  name: 'fs_write',
  description:
    'Write a text file inside the allowed roots. mode "create" fails if the file exists, "overwrite" replaces it, "append" adds to it.',
  category: 'file_change',
  risk: 'medium',
  parameters: z.strictObject({
    path,
    content: z.string().max(1_048_576),
    mode: z.enum(['create', 'overwrite', 'append']).default('create'),
  }),
  pathFields: ['path'],
});

export const fsMove = defineTool({
  name: 'fs_move',
  description: 'Move or rename a file or directory inside the allowed roots.',
  category: 'file_change',
  risk: 'medium',
  parameters: z.strictObject({ from: path, to: path, overwrite: z.boolean().default(false) }),
  pathFields: ['from', 'to'],
});

export const fsDelete = defineTool({
  name: 'fs_delete',
  description: 'Delete a file, or a directory when recursive is true, inside the allowed roots.',
  category: 'delete',
  risk: 'high',
  parameters: z.strictObject({ path, recursive: z.boolean().default(false) }),
  pathFields: ['path'],
});

export const fsChmod = defineTool({
  name: 'fs_chmod',
  description: 'Change the permission bits of a file or directory inside the allowed roots (octal, e.g. "640"; no special bits).',
  category: 'file_change',
  risk: 'high',
  parameters: z.strictObject({
    path,
    // No setuid, setgid or sticky bits: this tool only sets permission bits.
    mode: z.string().regex(/^0?[0-7]{3}$/, 'mode must be 3 octal permission digits, e.g. "640"'),
  }),
  pathFields: ['path'],
});

/** The control tool that ends a job; it never reaches the tools queue. */
export const complete = defineTool({
  name: 'complete',
  description: 'Finish the job. Call this alone, once the goal is reached, with a short summary of what was done.',
  category: 'control',
  risk: 'low',
  parameters: z.strictObject({ summary: z.string().min(1).max(4000) }),
  pathFields: [],
});

export const COMPLETE_TOOL = complete.name;

const all = [fsList, fsRead, fsStat, fsWrite, fsMove, fsDelete, fsChmod, complete] as const;

export const toolDefinitions: ReadonlyMap<string, ToolDefinition> = new Map(
  all.map((tool) => [tool.name, tool as unknown as ToolDefinition]),
);

/** Tools that run on the tools queue (everything but control tools). */
export const sideEffectToolNames: readonly string[] = all.filter((t) => t.category !== 'control').map((t) => t.name);

export function getTool(name: string): ToolDefinition | undefined {
  return toolDefinitions.get(name);
}

/**
 * Path arguments in one canonical spelling: relative paths taken from the
 * first root, `.`/`..`/`//` folded. Rules, fingerprints, reviewers and tools
 * then all see the same text for the same place.
 */
export function canonicalArgs(tool: ToolDefinition, args: Record<string, unknown>, roots: readonly string[]): Record<string, unknown> {
  if (tool.pathFields.length === 0) return args;
  const out = { ...args };
  for (const field of tool.pathFields) {
    const value = out[field];
    if (typeof value === 'string') out[field] = roots[0] === undefined ? normalizePosix(value) : resolvePosix(roots[0], value);
  }
  return out;
}
