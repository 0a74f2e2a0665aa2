import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { readFile } from 'node:fs/promises';
import type { AddressInfo } from 'node:net';
import {
  REPLAY_EXHAUSTED_CONTENT,
  formatZodIssues,
  replayScriptSchema,
  type ReplayScript,
} from '../../core/model/replay-script';
import { AirlockError } from '../../core/util/errors';

/** The replay script file could not be read or is not valid. */
export class ReplayScriptError extends AirlockError {
  override name = 'ReplayScriptError';
  constructor(
    readonly file: string,
    detail: string,
    cause?: unknown,
  ) {
    super(`replay script ${file}: ${detail}`, { cause });
  }
}

export function parseReplayScript(value: unknown, source = '(inline)'): ReplayScript {
  const result = replayScriptSchema.safeParse(value);
  if (!result.success) throw new ReplayScriptError(source, formatZodIssues(result.error));
  return result.data;
}

export async function loadReplayScript(file: string): Promise<ReplayScript> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new ReplayScriptError(file, `cannot read it (${(err as NodeJS.ErrnoException).code ?? String(err)})`, err);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ReplayScriptError(file, `not valid JSON (${(err as Error).message})`, err);
  }
  return parseReplayScript(json, file);
}

/** A chat completion request as the replay server saw it. */
export interface RecordedRequest {
  readonly model: unknown;
  readonly messages: ReadonlyArray<Record<string, unknown>>;
  readonly tools: unknown;
  readonly turn: number;
}

export interface ReplayServer {
  /** Base URL for an OpenAI client, ending in `/v1`. */
  readonly baseUrl: string;
  readonly port: number;
  /** Requests seen so far, oldest first (bounded). */
  readonly requests: readonly RecordedRequest[];
  setScript(script: ReplayScript): void;
  close(): Promise<void>;
}

const MAX_RECORDED = 500;
const MAX_BODY_BYTES = 8 * 1024 * 1024;

/**
 * A local OpenAI-compatible chat completions server that replays scripted
 * turns. Stateless per request: the turn is the number of assistant messages
 * already in the request, so retries and restarts replay the same turn.
 */
export async function startReplayServer(options: {
  script: ReplayScript;
  port?: number;
  host?: string;
}): Promise<ReplayServer> {
  let script = options.script;
  const requests: RecordedRequest[] = [];
  const host = options.host ?? '127.0.0.1';

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => sendError(res, 500, 'server_error', String(err)));
  });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '').split('?')[0];
    if (req.method === 'GET' && path === '/v1/models') {
      sendJson(res, 200, { object: 'list', data: [{ id: 'airlock-replay', object: 'model', owned_by: 'airlock' }] });
      return;
    }
    if (req.method !== 'POST' || path !== '/v1/chat/completions') {
      sendError(res, 404, 'not_found', `the replay server serves POST /v1/chat/completions, not ${req.method} ${path}`);
      return;
    }
    const body = await readBody(req);
    if (body === undefined) {
      sendError(res, 413, 'invalid_request_error', 'request body too large');
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      sendError(res, 400, 'invalid_request_error', 'request body is not valid JSON');
      return;
    }
    if (typeof parsed !== 'object' || parsed === null || !Array.isArray((parsed as { messages?: unknown }).messages)) {
      sendError(res, 400, 'invalid_request_error', 'request needs a "messages" array');
      return;
    }
    const request = parsed as { model?: unknown; messages: Array<Record<string, unknown>>; tools?: unknown; stream?: unknown };
    if (request.stream === true) {
      sendError(res, 400, 'invalid_request_error', 'the replay server does not stream; send stream: false');
      return;
    }
    const turn = request.messages.filter((m) => m?.role === 'assistant').length;
    requests.push({ model: request.model, messages: request.messages, tools: request.tools, turn });
    if (requests.length > MAX_RECORDED) requests.shift();
    sendJson(res, 200, completionFor(script, turn, request.model));
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;
  return {
    baseUrl: `http://${host}:${port}/v1`,
    port,
    requests,
    setScript(next) {
      script = next;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function completionFor(script: ReplayScript, turn: number, model: unknown): Record<string, unknown> {
  const scripted = script.turns[turn];
  const toolCalls = (scripted?.tool_calls ?? []).map((call, index) => ({
    id: call.id ?? `call_${turn}_${index}`,
    type: 'function',
    function: {
      name: call.name,
      arguments: typeof call.arguments === 'string' ? call.arguments : JSON.stringify(call.arguments),
    },
  }));
  const content = scripted === undefined ? REPLAY_EXHAUSTED_CONTENT : (scripted.content ?? null);
  return {
    id: `chatcmpl-replay-${turn}`,
    object: 'chat.completion',
    created: 0,
    model: typeof model === 'string' ? model : 'airlock-replay',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content, ...(toolCalls.length > 0 ? { tool_calls: toolCalls } : {}) },
        finish_reason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
        logprobs: null,
      },
    ],
    usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
  };
}

async function readBody(req: IncomingMessage): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY_BYTES) return undefined;
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks).toString('utf8');
}

function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

function sendError(res: ServerResponse, status: number, type: string, message: string): void {
  if (res.headersSent) {
    res.end();
    return;
  }
  sendJson(res, status, { error: { message, type, code: null, param: null } });
}
