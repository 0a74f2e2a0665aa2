import { appendFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

/**
 * An upstream MCP server for tests, built on the SDK's own McpServer: over
 * stdio (no arguments) or Streamable HTTP (`--http PORT`, requiring
 * `Authorization: Bearer upstream-secret`). `append_line` declares nothing
 * (a change airlock cannot see); `slow_append` writes `<path>.started`,
 * waits, then appends (a call a crash can cut in the middle).
 */

function server(): McpServer {
  const mcp = new McpServer({ name: 'fixture-upstream', version: '1.0.0' });
  mcp.registerTool('append_line', { description: 'Appends a line to a file.', inputSchema: { path: z.string(), line: z.string() } }, ({ path, line }) => {
    appendFileSync(path, `${line}\n`);
    return { content: [{ type: 'text', text: `appended to ${path}` }] };
  });
  mcp.registerTool(
    'slow_append',
    { description: 'Appends a line to a file, slowly.', inputSchema: { path: z.string(), line: z.string(), ms: z.number().int().min(0).max(60_000) } },
    async ({ path, line, ms }) => {
      writeFileSync(`${path}.started`, String(process.pid));
      await new Promise((r) => setTimeout(r, ms));
      appendFileSync(path, `${line}\n`);
      return { content: [{ type: 'text', text: `appended to ${path}` }] };
    },
  );
  return mcp;
}

async function main(): Promise<void> {
  const at = process.argv.indexOf('--http');
  if (at < 0) {
    await server().connect(new StdioServerTransport());
    return;
  }
  const port = Number(process.argv[at + 1]);
  const http = createServer((req, res) => {
    if (req.headers.authorization !== 'Bearer upstream-secret') {
      res.writeHead(401, { 'content-type': 'text/plain' }).end('missing or wrong token');
      return;
    }
    const mcp = server();
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void mcp.close();
    });
    void mcp.connect(transport).then(() => transport.handleRequest(req, res));
  });
  http.listen(port, '127.0.0.1', () => process.stderr.write(`fixture upstream listening on ${port}\n`));
}

void main();
