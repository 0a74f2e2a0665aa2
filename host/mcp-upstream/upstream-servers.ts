import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ErrorCode, McpError, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { McpConfig, McpServerConfig } from '../../core/config/tools/mcp';
import type { UpstreamCall, UpstreamCapability } from '../../core/tools/capabilities/upstream';
import type { ToolOutcome } from '../../core/tools/outcome';
import { ToolRefusal } from '../../core/tools/tool-refusal';
import { schemaDepth } from '../../core/tools/upstream/bounded-schema';
import { MAX_UPSTREAM_SCHEMA_CHARS, upstreamAnnotationsSchema, upstreamToolName, upstreamToolSpecSchema, type UpstreamToolSpec } from '../../core/tools/upstream/upstream-spec';
import { describeError } from '../../core/temporal/describe-error';
import { ToolsConfigError } from '../tools-config-file';

/**
 * The tools config's upstream MCP servers, as airlock's MCP client: each
 * started (or reached) with the SDK's client, its tools listed once and
 * lent under airlock names, and only the allowlisted ones. A server that
 * cannot be reached lends nothing (said on stderr) rather than stopping
 * the worker; two tools under one airlock name stop it.
 */

/** Longest wait for one upstream call, below the tools activity's 10 minutes: a call beyond it is reported unknown, not retried. */
const CALL_TIMEOUT_MS = 9 * 60_000;

interface Connected {
  readonly name: string;
  readonly config: McpServerConfig;
  client: Client | undefined;
}

export interface UpstreamServersOptions {
  readonly config: McpConfig;
  /** The tools config file, for errors. */
  readonly file: string;
  readonly version: string;
  readonly log?: (line: string) => void;
}

function transportOf(config: McpServerConfig) {
  if ('url' in config) return new StreamableHTTPClientTransport(new URL(config.url), { requestInit: { headers: { ...config.headers } } });
  const [command, ...args] = config.command;
  // Only the SDK's small default environment (PATH, HOME, …) and what the config adds: none of the worker's secrets.
  return new StdioClientTransport({ command: command ?? '', args, env: { ...getDefaultEnvironment(), ...config.env }, stderr: 'inherit' });
}

async function connect(server: Connected, version: string): Promise<Client> {
  const client = new Client({ name: 'airlock', version });
  await client.connect(transportOf(server.config));
  client.onclose = () => {
    // Gone (the process exited, the connection closed): the next call connects anew.
    if (server.client === client) server.client = undefined;
  };
  server.client = client;
  return client;
}

async function listAll(client: Client): Promise<Tool[]> {
  const tools: Tool[] = [];
  let cursor: string | undefined;
  do {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    tools.push(...page.tools);
    cursor = page.nextCursor;
  } while (cursor !== undefined && tools.length < 10_000);
  return tools;
}

/** What an upstream answered, as the model reads it: its text, other content named, `isError` a failed outcome. */
export function outcomeOf(result: CallToolResult): ToolOutcome {
  const parts = result.content.map((c) => {
    if (c.type === 'text') return c.text;
    if (c.type === 'image' || c.type === 'audio') return `[${c.type} ${c.mimeType}, ${Math.ceil((c.data.length * 3) / 4)} bytes]`;
    if (c.type === 'resource_link') return `[resource ${c.uri}]`;
    return `[resource ${c.resource.uri}]`;
  });
  const text = parts.length > 0 ? parts.join('\n') : result.structuredContent !== undefined ? JSON.stringify(result.structuredContent) : '';
  return { ok: result.isError !== true, output: text === '' ? '(the tool returned nothing)' : text };
}

/** Nesting of an input schema a job carries at most (its snapshot is hashed and sealed by recursive code). */
const MAX_SCHEMA_DEPTH = 32;

/** Why an upstream's input schema cannot travel in a job's snapshot; undefined when it can. */
function schemaProblem(schema: unknown): string | undefined {
  if (schemaDepth(schema, MAX_SCHEMA_DEPTH) > MAX_SCHEMA_DEPTH) return `nests deeper than ${MAX_SCHEMA_DEPTH} levels`;
  if (JSON.stringify(schema).length > MAX_UPSTREAM_SCHEMA_CHARS) return `is larger than ${MAX_UPSTREAM_SCHEMA_CHARS} characters`;
  return undefined;
}

/** The SDK's codes for "no answer came" (as opposed to an error the server answered). */
const noAnswer: ReadonlySet<number> = new Set([ErrorCode.RequestTimeout, ErrorCode.ConnectionClosed]);

export class UpstreamServers implements UpstreamCapability {
  private constructor(
    private readonly servers: ReadonlyMap<string, Connected>,
    /** The tools lent, allowlisted and named. */
    readonly specs: readonly UpstreamToolSpec[],
    private readonly version: string,
  ) {}

  /** Connects to every server and lists its tools; throws `ToolsConfigError` when two tools would share a name or one cannot be named. */
  static async connect(options: UpstreamServersOptions): Promise<UpstreamServers> {
    const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
    const allowed = new Set(options.config.tools);
    const servers = new Map<string, Connected>();
    const specs: UpstreamToolSpec[] = [];
    const problems: Array<{ field: string; message: string }> = [];
    const seen = new Map<string, string>();
    for (const [name, config] of Object.entries(options.config.servers)) {
      const server: Connected = { name, config, client: undefined };
      servers.set(name, server);
      let listed: Tool[];
      try {
        listed = await listAll(await connect(server, options.version));
      } catch (err) {
        log(`airlock: MCP server ${name} could not be reached (${describeError(err)}); its tools are not offered until the worker restarts`);
        continue;
      }
      for (const tool of listed) {
        const airlockName = upstreamToolName(name, tool.name);
        // Only what is lent matters: a server's other tools may be named as they like.
        if (airlockName === undefined || !allowed.has(airlockName)) continue;
        const other = seen.get(airlockName);
        if (other !== undefined) {
          problems.push({ field: `mcp.servers.${name}`, message: `tools ${JSON.stringify(other)} and ${JSON.stringify(tool.name)} would both be ${airlockName}` });
          continue;
        }
        seen.set(airlockName, tool.name);
        const unfit = schemaProblem(tool.inputSchema);
        if (unfit !== undefined) {
          log(`airlock: tool ${tool.name} of MCP server ${name} is not offered: its input schema ${unfit}`);
          continue;
        }
        const annotations = upstreamAnnotationsSchema.parse({
          readOnlyHint: tool.annotations?.readOnlyHint,
          destructiveHint: tool.annotations?.destructiveHint,
          idempotentHint: tool.annotations?.idempotentHint,
          openWorldHint: tool.annotations?.openWorldHint,
        });
        specs.push(upstreamToolSpecSchema.parse({ schemaVersion: 1, name: airlockName, server: name, tool: tool.name, description: (tool.description ?? '').slice(0, 4000), inputSchema: tool.inputSchema, annotations }));
      }
    }
    const upstream = new UpstreamServers(servers, specs, options.version);
    if (problems.length > 0) {
      await upstream.close();
      throw new ToolsConfigError(options.file, problems);
    }
    const missing = options.config.tools.filter((t) => !specs.some((s) => s.name === t));
    if (missing.length > 0 && servers.size > 0) log(`airlock: the tools config lends ${missing.join(', ')}, which no reachable MCP server lists; not offered`);
    return upstream;
  }

  async call(call: UpstreamCall): Promise<ToolOutcome> {
    const server = this.servers.get(call.server);
    if (server === undefined) throw new ToolRefusal(`the tools config lists no MCP server ${call.server}`);
    if (!this.specs.some((s) => s.server === call.server && s.tool === call.tool)) {
      // Refused here, before the server hears of it: only what the allowlist lends is ever sent.
      throw new ToolRefusal(`tool ${call.tool} of MCP server ${call.server} is not lent by the tools config`);
    }
    let client = server.client;
    if (client === undefined) {
      try {
        client = await connect(server, this.version);
      } catch (err) {
        throw new ToolRefusal(`MCP server ${call.server} could not be reached (${describeError(err)}); nothing was sent`);
      }
    }
    let answer: unknown;
    try {
      answer = await client.callTool({ name: call.tool, arguments: { ...call.args } }, undefined, { timeout: CALL_TIMEOUT_MS });
    } catch (err) {
      // The server answered with an error: it says it did not run the call.
      if (err instanceof McpError && !noAnswer.has(err.code)) return { ok: false, output: `MCP server ${call.server} refused ${call.tool}: ${err.message}` };
      // No answer (the connection closed, the wait ran out): the call may have run, in part or in whole.
      return { ok: false, output: `Outcome unknown: MCP server ${call.server} gave no answer to ${call.tool} (${describeError(err)}); it may have run, in part or not at all. It will not be sent again; check what it acts on before relying on it.` };
    }
    // A result of another shape (an old protocol's `toolResult`) is not one airlock asked for.
    const parsed = CallToolResultSchema.safeParse(answer);
    if (!parsed.success) return { ok: false, output: `MCP server ${call.server} answered ${call.tool} with no content` };
    return outcomeOf(parsed.data);
  }

  async close(): Promise<void> {
    await Promise.all([...this.servers.values()].map(async (s) => s.client?.close().catch(() => undefined)));
  }
}
