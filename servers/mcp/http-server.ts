import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Server as McpServer } from '@modelcontextprotocol/sdk/server/index.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { sanitizeAuditEvent } from '../../core/audit/events';
import { HttpError, readJsonBody } from '../http/guard';
import { describeError } from '../../core/temporal/describe-error';
import type { AuditSink } from '../../host/stores/audit-log/store';
import type { AgentTokens } from '../../host/stores/agent-tokens/store';
import { refusalAudit, refusalResponse, type Refusal } from './http-refusals';
import type { ListenAddress } from './listen-address';

/** The MCP endpoint's path. */
export const MCP_PATH = '/mcp';

/** The largest JSON-RPC body taken (a call's arguments: a file written whole stays far below). */
export const MAX_BODY_BYTES = 4 * 1024 * 1024;

/** How often a token's last use is written at most: a busy agent must not write on every call. */
const MARK_USED_EVERY_MS = 60_000;

/** At most this many refusals a minute are audited: a flood of bad requests must not fill the log. */
const AUDITED_PER_MINUTE = 120;
/** Requests of one agent in progress at once (a JSON-RPC batch is one request). */
const MAX_IN_FLIGHT_PER_AGENT = 16;
/** Messages in one JSON-RPC batch. */
const MAX_BATCH = 8;

export interface McpHttpOptions {
  readonly listen: ListenAddress;
  readonly allowedHosts: ReadonlySet<string>;
  readonly allowedOrigins: ReadonlySet<string>;
  readonly tokens: AgentTokens;
  readonly audit: AuditSink;
  /** A new MCP server for one request of this agent (`createGateway`). */
  readonly gatewayFor: (agent: string) => McpServer;
  /** Where lines for the operator go (stderr). */
  readonly log: (line: string) => void;
}

export interface McpHttpServer {
  readonly url: string;
  close(): Promise<void>;
}

/** A request that goes no further: its status and one line, as a JSON-RPC error (clients show `message`). */
class Stop extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly headers: Readonly<Record<string, string>> = {},
  ) {
    super(message);
  }
}

const BASE_HEADERS = { 'Cache-Control': 'no-store', 'X-Content-Type-Options': 'nosniff' } as const;

function sendError(res: ServerResponse, stop: Stop): void {
  const body = JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: stop.message.replace(/\s+/g, ' ') }, id: null });
  res.writeHead(stop.status, { ...BASE_HEADERS, ...stop.headers, 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)) });
  res.end(body);
}

function bearerOf(req: IncomingMessage): string | undefined {
  const match = /^Bearer[ ]+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  return match?.[1];
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  try {
    return await readJsonBody(req, { maxBytes: MAX_BODY_BYTES, notJson: 'the body is not valid JSON (send a JSON-RPC message)' });
  } catch (err) {
    throw err instanceof HttpError ? new Stop(err.status, err.message) : err;
  }
}

/**
 * `airlock mcp --listen`: MCP over Streamable HTTP at `/mcp`, stateless —
 * a new gateway and transport per POST, closed with its response — so
 * all that lasts is in Temporal and a client goes on across a restart.
 * Before a request reaches a gateway: its Host must be this server's (a
 * rebound DNS name gets nothing), a browser page's Origin must be one
 * allowed, and its bearer token must be an agent's active token; that
 * agent is the job's requester. Every refusal is one line and audited.
 */
export async function startMcpHttpServer(options: McpHttpOptions): Promise<McpHttpServer> {
  const used = new Map<string, number>();
  // A budget per kind of refusal and per who (agent, else address): junk from one place cannot hide another's refusals.
  let window = { start: Date.now(), audited: new Map<string, number>(), dropped: 0 };

  async function audit(refusal: Refusal, remoteAddress: string): Promise<void> {
    const now = Date.now();
    if (now - window.start >= 60_000) {
      if (window.dropped > 0) options.log(`airlock mcp: ${window.dropped} refused request(s) in the last minute were not audited (more than ${AUDITED_PER_MINUTE} a minute of one kind from one agent or address)`);
      window = { start: now, audited: new Map(), dropped: 0 };
    }
    const who = `${refusal.kind}\u0000${refusal.kind === 'revoked_token' ? refusal.agent : remoteAddress}`;
    const count = window.audited.get(who) ?? 0;
    if (count >= AUDITED_PER_MINUTE) {
      window.dropped++;
      return;
    }
    window.audited.set(who, count + 1);
    const data = refusalAudit(refusal, remoteAddress);
    const jobId = data.agent === undefined ? 'mcp' : `mcp-${data.agent}`;
    try {
      await options.audit.write([sanitizeAuditEvent({ type: 'mcp_refused', jobId, at: new Date(now).toISOString(), policyVersion: undefined, eventId: randomUUID(), data })]);
    } catch (err) {
      options.log(`airlock mcp: could not audit a refused request (${refusal.kind}): ${describeError(err)}`);
    }
  }

  /** The agent the request speaks for, or the refusal that ends it. */
  async function admit(req: IncomingMessage): Promise<{ kind: 'agent'; agent: string; token: string } | { kind: 'refused'; refusal: Refusal }> {
    const host = (req.headers.host ?? '').toLowerCase();
    if (!options.allowedHosts.has(host)) return { kind: 'refused', refusal: { kind: 'wrong_host', host } };
    const origin = req.headers.origin;
    // Non-browser clients send no Origin; a page in a browser always does.
    if (origin !== undefined && !options.allowedOrigins.has(origin)) return { kind: 'refused', refusal: { kind: 'foreign_origin', origin } };
    const token = bearerOf(req);
    if (token === undefined) return { kind: 'refused', refusal: { kind: 'no_token' } };
    let found;
    try {
      found = await options.tokens.lookup(token);
    } catch (err) {
      throw new Stop(503, `airlock cannot check tokens now: ${describeError(err)}`);
    }
    switch (found.kind) {
      case 'unknown':
        return { kind: 'refused', refusal: { kind: 'unknown_token' } };
      case 'revoked':
        return { kind: 'refused', refusal: { kind: 'revoked_token', agent: found.agent, revokedAt: found.revokedAt } };
      case 'valid':
        return { kind: 'agent', agent: found.agent, token };
    }
  }

  function markUsed(agent: string, token: string): void {
    const now = Date.now();
    if (now - (used.get(agent) ?? 0) < MARK_USED_EVERY_MS) return;
    used.set(agent, now);
    options.tokens.markUsed(token).catch((err: unknown) => options.log(`airlock mcp: could not record the use of agent ${agent}'s token: ${describeError(err)}`));
  }

  const inFlight = new Map<string, number>();

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const admitted = await admit(req);
    if (admitted.kind === 'refused') {
      const answer = refusalResponse(admitted.refusal, { allowedHosts: options.allowedHosts });
      await audit(admitted.refusal, req.socket.remoteAddress ?? 'unknown');
      throw new Stop(answer.status, answer.message, answer.headers);
    }
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path !== MCP_PATH) throw new Stop(404, `nothing here; MCP is served at ${MCP_PATH}`);
    // Stateless: no session to resume (GET) or end (DELETE).
    if (req.method !== 'POST') throw new Stop(405, `only POST is served at ${MCP_PATH} (stateless Streamable HTTP: no sessions, no server-sent stream of its own)`, { Allow: 'POST' });
    const held = inFlight.get(admitted.agent) ?? 0;
    // Each request may hold calls open for --wait and query the job every second: one agent cannot hold the server.
    if (held >= MAX_IN_FLIGHT_PER_AGENT) throw new Stop(429, `agent ${admitted.agent} already has ${held} requests in progress; wait for one to end`, { 'Retry-After': '5' });
    inFlight.set(admitted.agent, held + 1);
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const now = (inFlight.get(admitted.agent) ?? 1) - 1;
      if (now > 0) inFlight.set(admitted.agent, now);
      else inFlight.delete(admitted.agent);
    };
    res.on('close', release);
    const body = await readJson(req);
    // JSON-RPC batches left MCP in 2025-06-18; a few still arrive from older clients, never a hundred calls at once.
    if (Array.isArray(body) && body.length > MAX_BATCH) throw new Stop(400, `a JSON-RPC batch of ${body.length} messages; send at most ${MAX_BATCH} in one request`);
    markUsed(admitted.agent, admitted.token);
    const server = options.gatewayFor(admitted.agent);
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.on('close', () => {
      void transport.close();
      void server.close();
    });
    for (const [name, value] of Object.entries(BASE_HEADERS)) res.setHeader(name, value);
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  }

  const http = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      const stop = err instanceof Stop ? err : new Stop(500, `airlock mcp failed on this request: ${describeError(err)}`);
      if (!(err instanceof Stop)) options.log(stop.message);
      if (!res.headersSent) sendError(res, stop);
      else res.end();
    });
  });
  await new Promise<void>((resolve, reject) => {
    http.once('error', reject);
    http.listen(options.listen.port, options.listen.host, () => {
      http.off('error', reject);
      resolve();
    });
  });
  const address = http.address();
  if (address === null || typeof address === 'string') throw new Error('the MCP server is not listening on a TCP port');
  const host = address.family === 'IPv6' ? `[${address.address}]` : address.address;
  return {
    url: `http://${host}:${address.port}${MCP_PATH}`,
    close: () =>
      new Promise<void>((resolve) => {
        http.close(() => resolve());
        http.closeAllConnections();
      }),
  };
}
