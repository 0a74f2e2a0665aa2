import type { ToolOutcome } from '../outcome';

/** One call of an upstream MCP server's tool, by the upstream's own names. */
export interface UpstreamCall {
  readonly server: string;
  readonly tool: string;
  readonly args: Readonly<Record<string, unknown>>;
}

/**
 * The upstream MCP servers the tools config lists, connected by the tools
 * worker (host/mcp-upstream/). A call is sent once; the upstream's answer
 * (its `isError` included) is the outcome. A server that cannot be reached
 * is a `ToolRefusal` before anything was sent, or an error after.
 */
export interface UpstreamCapability {
  call(call: UpstreamCall): Promise<ToolOutcome>;
}
