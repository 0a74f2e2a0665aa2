import type { ToolOutcome } from '../outcome';

/** One call of an upstream MCP server's tool, by the upstream's own names. */
export interface UpstreamCall {
  readonly server: string;
  readonly tool: string;
  readonly args: Readonly<Record<string, unknown>>;
  /** The definition digest the call was approved for (`definitionDigest`); absent: the one listed when the worker started. */
  readonly definition?: string;
}

/**
 * The upstream MCP servers the tools config lists, connected by the tools
 * worker (host/mcp-upstream/). A tool's definition (name, description,
 * input schema, annotations) is checked again before each call, since a
 * server may change it between the card and the run. A call is sent once; the upstream's answer
 * (its `isError` included) is the outcome. A server that cannot be reached
 * is a `ToolRefusal` before anything was sent, or an error after.
 */
export interface UpstreamCapability {
  /**
   * Sent only after the server lists the tool again with the definition the
   * call was approved for; another one (or none) is a `ToolRefusal`, nothing
   * sent.
   */
  call(call: UpstreamCall): Promise<ToolOutcome>;
  /**
   * The tool as its server lists it now (asked again, not remembered): its
   * definition digest, and whether that is still the one the worker listed
   * at start and lends. A `ToolRefusal` when the server cannot be reached.
   */
  definition(tool: { readonly server: string; readonly tool: string }): Promise<{ readonly digest: string | null; readonly lent: boolean }>;
}
