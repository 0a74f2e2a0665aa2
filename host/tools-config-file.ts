import { readFile } from 'node:fs/promises';
import { resolve } from 'node:path';
import { parse as parseYaml } from 'yaml';
import type { z } from 'zod';
import type { AirlockConfig } from '../core/config/config';
import { AirlockError } from '../core/util/errors';
import { availabilityOf, toolsConfigSchema, type ToolsConfig } from '../core/config/tools/tools-config';
import { availableToolNames } from '../core/tools/registry';
import type { Availability } from '../core/tools/tool-host';
import { statePaths } from './paths';

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
        'Fix the file (the README shows an example) or unset AIRLOCK_TOOLS_CONFIG',
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
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new ToolsConfigError(file, [{ field: '(file)', message: `cannot read it (${(err as NodeJS.ErrnoException).code ?? String(err)})` }], err);
  }
  let raw: unknown;
  try {
    raw = parseYaml(text, { prettyErrors: true, uniqueKeys: true });
  } catch (err) {
    throw new ToolsConfigError(file, [{ field: '(file)', message: `not valid YAML/JSON: ${(err as Error).message.split('\n')[0] ?? ''}` }], err);
  }
  return parseToolsConfig(raw, file);
}

/** What the tools may touch on this machine, from AIRLOCK_TOOLS_CONFIG and AIRLOCK_ROOTS. */
export interface ToolsSetup {
  readonly file: string | undefined;
  readonly config: ToolsConfig | undefined;
  /** Absolute folders: the tools config's `roots`, else AIRLOCK_ROOTS, else the data folder's sandbox. */
  readonly roots: readonly string[];
  readonly availability: Availability;
  /** The tools this configuration can run, in registry order. */
  readonly availableTools: readonly string[];
}

/**
 * Read by the agent worker (the tools it offers, the roots its detectors
 * know) and the tools worker (what it lends the tools) alike, so both see
 * the same configuration.
 */
export async function loadToolsSetup(config: AirlockConfig): Promise<ToolsSetup> {
  const paths = statePaths(config);
  const file = config.toolsConfigFile === undefined ? undefined : resolve(config.toolsConfigFile);
  const tools = file === undefined ? undefined : await readToolsConfig(file);
  if (file !== undefined && tools?.roots !== undefined && config.roots !== undefined) {
    throw new ToolsConfigError(file, [{ field: 'roots', message: 'roots are also set in AIRLOCK_ROOTS; keep them in one place (remove roots from the file or unset AIRLOCK_ROOTS)' }]);
  }
  const availability = availabilityOf(tools);
  return {
    file,
    config: tools,
    roots: tools?.roots?.map((r) => resolve(r)) ?? paths.roots,
    availability,
    availableTools: availableToolNames(availability),
  };
}
