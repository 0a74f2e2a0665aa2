import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { JobHarness } from './job-harness';
import { repoRoot } from './processes';

/** The text of a tool result, its parts joined by newlines. */
export const textOf = (result: unknown): string => {
  const content = (result as { content?: Array<{ type: string; text?: string }> }).content ?? [];
  return content.map((c) => c.text ?? '').join('\n');
};

/** The request id and call id a "waiting for approval" answer gives. */
export function waitingIds(text: string): { requestId: string; call: string } {
  return { requestId: /request (\S+) /.exec(text)?.[1] ?? '', call: /"call": "([^"]+)"/.exec(text)?.[1] ?? '' };
}

/** The environment an `airlock mcp` process gets: the harness's namespace and data folder, its root as the tools' root (defined values only). */
export function mcpEnv(h: JobHarness): Record<string, string> {
  return Object.fromEntries(Object.entries(h.processEnv({ AIRLOCK_ROOTS: h.root })).filter((e): e is [string, string] => e[1] !== undefined));
}

/**
 * An MCP client of its own `airlock mcp` process (the built CLI, over
 * stdio), as a desktop assistant starts it: the official SDK's client in
 * the test process, the server in a child whose pid a test may kill.
 */

export interface McpConnection {
  readonly client: Client;
  readonly transport: StdioClientTransport;
}

export async function connectMcp(h: JobHarness, options: { readonly agent?: string; readonly wait?: string } = {}): Promise<McpConnection> {
  const env = mcpEnv(h);
  const client = new Client({ name: 'airlock-test-client', version: '1.0.0' });
  const args = [join(repoRoot, 'bin', 'airlock.js'), 'mcp', '--agent', options.agent ?? 'claude', '--wait', options.wait ?? '3s'];
  const transport = new StdioClientTransport({ command: process.execPath, args, env, stderr: 'inherit' });
  await client.connect(transport);
  return { client, transport };
}

