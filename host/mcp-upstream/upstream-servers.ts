import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { getDefaultEnvironment, StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, ErrorCode, McpError, ToolListChangedNotificationSchema, type CallToolResult, type Tool } from '@modelcontextprotocol/sdk/types.js';
import type { McpConfig, McpServerConfig } from '../../core/config/tools/mcp';
import type { UpstreamCall, UpstreamCapability } from '../../core/tools/capabilities/upstream';
import type { ToolOutcome } from '../../core/tools/outcome';
import { ToolRefusal } from '../../core/tools/tool-refusal';
import { schemaDepth } from '../../core/tools/upstream/bounded-schema';
import { definitionDigest, MAX_UPSTREAM_SCHEMA_CHARS, upstreamAnnotationsSchema, upstreamCategory, upstreamToolName, upstreamToolSpecSchema, type UpstreamToolSpec } from '../../core/tools/upstream/upstream-spec';
import { describeError } from '../../core/temporal/describe-error';
import { ToolsConfigError } from '../config/tools-config-file';

/**
 * The tools config's upstream MCP servers, as airlock's MCP client: each
 * started (or reached) with the SDK's client, its tools listed once and
 * lent under airlock names, and only the allowlisted ones, each with the
 * digest of its definition as listed then. Before a call is sent the
 * server is asked to list its tools again, and a tool whose definition
 * changed is refused: what a server announces later (a tool added or
 * changed, `notifications/tools/list_changed`) is not lent until the worker
 * lists it again at its restart. A server that cannot be reached lends
 * nothing (said on stderr) rather than stopping the worker; two tools
 * under one airlock name stop it.
 */

/** Longest wait for one upstream call, below the tools activity's 10 minutes: a call beyond it is reported unknown, not retried. */
const CALL_TIMEOUT_MS = 9 * 60_000;

interface Connected {
  readonly name: string;
  readonly config: McpServerConfig;
  client: Client | undefined;
  /** The lent tools' definition digests as listed at start, by the server's own tool name. */
  readonly lent: Map<string, string>;
  readonly log: (line: string) => void;
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
  // Said, not followed: a changed tool is refused at its next call, a new one waits for the worker's restart.
  client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
    server.log(`airlock: MCP server ${server.name} says its tools changed; airlock keeps lending what it listed at start and refuses a call of a tool whose definition changed. Restart the tools worker to list them again`);
  });
  await client.connect(transportOf(server.config));
  client.onclose = () => {
    // Gone (the process exited, the connection closed): the next call connects anew.
    if (server.client === client) server.client = undefined;
  };
  server.client = client;
  return client;
}

/** Pages of a listing read at most: a server that answers every page with another cursor (empty pages included) ends the listing there. */
const MAX_LIST_PAGES = 100;

async function listAll(client: Client): Promise<Tool[]> {
  const tools: Tool[] = [];
  let cursor: string | undefined;
  for (let pages = 0; pages < MAX_LIST_PAGES; pages++) {
    const page = await client.listTools(cursor === undefined ? {} : { cursor });
    tools.push(...page.tools);
    cursor = page.nextCursor;
    if (cursor === undefined || tools.length >= 10_000) return tools;
  }
  throw new Error(`the server answered ${MAX_LIST_PAGES} pages of its tool list and gave yet another cursor`);
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
      const server: Connected = { name, config, client: undefined, lent: new Map(), log };
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
        const definition = definitionDigest(tool);
        server.lent.set(tool.name, definition);
        specs.push(
          upstreamToolSpecSchema.parse({
            schemaVersion: 1,
            name: airlockName,
            server: name,
            tool: tool.name,
            description: (tool.description ?? '').slice(0, 4000),
            inputSchema: tool.inputSchema,
            annotations,
            trustAnnotations: config.trustAnnotations === true,
            definition,
          }),
        );
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

  /** The server's client, connected anew when the last connection closed; a `ToolRefusal` when it cannot be reached. */
  private async clientOf(server: Connected): Promise<Client> {
    if (server.client !== undefined) return server.client;
    try {
      return await connect(server, this.version);
    } catch (err) {
      throw new ToolRefusal(`MCP server ${server.name} could not be reached (${describeError(err)}); nothing was sent`);
    }
  }

  /** A lent tool's server; refused, before the server hears of it, for anything the allowlist does not lend. */
  private lentServer(name: string, tool: string): Connected {
    const server = this.servers.get(name);
    if (server === undefined) throw new ToolRefusal(`the tools config lists no MCP server ${name}`);
    if (!server.lent.has(tool)) throw new ToolRefusal(`tool ${tool} of MCP server ${name} is not lent by the tools config`);
    return server;
  }

  async definition(named: { readonly server: string; readonly tool: string }): Promise<{ readonly digest: string | null; readonly lent: boolean }> {
    const server = this.lentServer(named.server, named.tool);
    const client = await this.clientOf(server);
    let listed: Tool[];
    try {
      listed = await listAll(client);
    } catch (err) {
      throw new ToolRefusal(`MCP server ${named.server} did not list its tools (${describeError(err)}); nothing was sent`);
    }
    const tool = listed.find((t) => t.name === named.tool);
    const digest = tool === undefined ? null : definitionDigest(tool);
    return { digest, lent: digest !== null && digest === server.lent.get(named.tool) };
  }

  async call(call: UpstreamCall): Promise<ToolOutcome> {
    const server = this.lentServer(call.server, call.tool);
    // The tool as its server lists it right now must be the one the call was approved for (or, unapproved, the one lent).
    const expected = call.definition ?? server.lent.get(call.tool);
    const now = await this.definition(call);
    if (now.digest === null) throw new ToolRefusal(`MCP server ${call.server} no longer lists ${call.tool}; nothing was sent`);
    if (now.digest !== expected) {
      throw new ToolRefusal(
        `tool ${call.tool} of MCP server ${call.server} changed ${call.definition !== undefined ? 'since this call was judged' : 'since the tools worker listed it'} (its description, input schema or annotations are not the ones ${call.definition !== undefined ? "the job's rules and its card saw" : 'it lends'}); nothing was sent`,
      );
    }
    const client = await this.clientOf(server);
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

/**
 * What the worker says at start of each server's lent tools: whether its
 * annotations are believed, and which of its tools are reads that run with
 * no person asked (the built-in rules ask for every other upstream tool).
 */
export function trustSummary(specs: readonly UpstreamToolSpec[]): string[] {
  const servers = [...new Set(specs.map((s) => s.server))];
  return servers.map((server) => {
    const lent = specs.filter((s) => s.server === server);
    if (lent.some((s) => s.trustAnnotations !== true)) {
      return `airlock: MCP server ${server}: its annotations are not trusted (trustAnnotations is not set on it in the tools config), so none of its tools is taken for a read; each waits for a person unless a rule lets it run: ${lent.map((s) => s.name).join(', ')}`;
    }
    const reads = lent.filter((s) => upstreamCategory(s) === 'read').map((s) => s.name);
    const others = lent.filter((s) => upstreamCategory(s) !== 'read').map((s) => s.name);
    return `airlock: MCP server ${server}: its annotations are trusted (trustAnnotations: true); declared read-only, these run without a person: ${reads.length > 0 ? reads.join(', ') : 'none'}${others.length > 0 ? `; the rest wait as the rules say: ${others.join(', ')}` : ''}`;
  });
}
