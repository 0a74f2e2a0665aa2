import { toolSpecs } from '../../core/tools/json-schema';
import { getTool, upstreamToolsInUse, type ToolCategory } from '../../core/tools/registry';

/**
 * airlock's tools as an MCP server lists them: the JSON Schema the model
 * gets (from the zod schemas that validate the calls), and the MCP tool
 * annotations read from each tool's category, and what airlock itself adds
 * for a client that cannot wait: `airlock_wait` and `airlock_status`.
 */

export interface McpToolAnnotations {
  readonly readOnlyHint: boolean;
  readonly destructiveHint: boolean;
  readonly idempotentHint: boolean;
  readonly openWorldHint: boolean;
}

export interface McpTool {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: { readonly type: 'object'; readonly [key: string]: unknown };
  readonly annotations: McpToolAnnotations;
  /** MCP Tasks: a gated tool may run as a task (it may wait for a person); airlock's own tools are the way without tasks. */
  readonly execution: { readonly taskSupport: 'optional' | 'forbidden' };
}

/** The annotation a category implies: only reads are read-only; what reaches another machine is open-world. */
export function annotationsOf(category: ToolCategory): McpToolAnnotations {
  const readOnly = category === 'read';
  return {
    readOnlyHint: readOnly,
    destructiveHint: category === 'delete' || category === 'file_change' || category === 'service_control' || category === 'command_execution',
    idempotentHint: readOnly,
    openWorldHint: category === 'network' || category === 'external_send',
  };
}

export const WAIT_TOOL = 'airlock_wait';
export const STATUS_TOOL = 'airlock_status';

/** airlock's own tools for a client that cannot hold a call open: both only read what the job knows. */
const ownTools: readonly McpTool[] = [
  {
    name: WAIT_TOOL,
    description: 'Waits (up to about a minute) for a call that is waiting for a person to approve it, and returns its result, or says it still waits. Pass the call id the waiting answer gave.',
    inputSchema: { type: 'object', properties: { call: { type: 'string', description: 'The call id from the "waiting for approval" answer.' } }, required: ['call'], additionalProperties: false },
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    execution: { taskSupport: 'forbidden' },
  },
  {
    name: STATUS_TOOL,
    description: 'Lists your calls that wait for a person to approve them, and the latest answered ones.',
    inputSchema: { type: 'object', properties: {}, additionalProperties: false },
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    execution: { taskSupport: 'forbidden' },
  },
];

export function mcpTools(available: readonly string[]): McpTool[] {
  // Only a trusted server's annotations are passed on: of any other, a client hears what airlock takes the tool for.
  const upstream = new Map(upstreamToolsInUse().flatMap((s) => (s.trustAnnotations === true ? [[s.name, s.annotations] as const] : [])));
  const gated = toolSpecs(available).map((spec): McpTool => {
    const category = getTool(spec.name)?.category ?? 'command_execution';
    // A trusted upstream's tool keeps what its server declared; the category fills in what it left out.
    const declared = Object.fromEntries(Object.entries(upstream.get(spec.name) ?? {}).filter(([, v]) => v !== undefined));
    return {
      name: spec.name,
      description: spec.description,
      inputSchema: { ...spec.parameters, type: 'object' },
      annotations: { ...annotationsOf(category), ...declared },
      execution: { taskSupport: 'optional' },
    };
  });
  return [...gated, ...ownTools];
}
