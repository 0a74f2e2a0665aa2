import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { JobHarness } from './job-harness';
import { repoRoot } from './processes';

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
  const env = Object.fromEntries(Object.entries(h.processEnv({ AIRLOCK_ROOTS: h.root })).filter((e): e is [string, string] => e[1] !== undefined));
  const client = new Client({ name: 'airlock-test-client', version: '1.0.0' });
  const args = [join(repoRoot, 'bin', 'airlock.js'), 'mcp', '--agent', options.agent ?? 'claude', '--wait', options.wait ?? '3s'];
  const transport = new StdioClientTransport({ command: process.execPath, args, env, stderr: 'inherit' });
  await client.connect(transport);
  return { client, transport };
}

/** A tool result's text, its text blocks joined. */
export function textOf(result: unknown): string {
  const content = (result as { content?: Array<{ type: string; text?: string }> }).content ?? [];
  return content.map((c) => c.text ?? '').join('\n');
}
