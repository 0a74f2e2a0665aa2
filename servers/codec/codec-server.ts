import { randomBytes, timingSafeEqual } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { dirname } from 'node:path';
import type { Payload, PayloadCodec } from '@temporalio/common';
import { z } from 'zod';

const MAX_BODY_BYTES = 8 * 1024 * 1024;

const payloadsSchema = z.object({
  payloads: z.array(z.object({ metadata: z.record(z.string(), z.string()).optional(), data: z.string().optional() })),
});

type JsonPayload = z.infer<typeof payloadsSchema>['payloads'][number];

function fromJson(p: JsonPayload): Payload {
  return {
    metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
    data: Buffer.from(p.data ?? '', 'base64'),
  };
}

function toJson(p: Payload): JsonPayload {
  return {
    metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v ?? []).toString('base64')])),
    data: Buffer.from(p.data ?? []).toString('base64'),
  };
}

/** The codec server's bearer token: created once (0600) beside the other keys. */
export function loadOrCreateCodecToken(file: string): string {
  if (!existsSync(file)) {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
    writeFileSync(file, `${randomBytes(24).toString('hex')}\n`, { mode: 0o600, flag: 'wx' });
  }
  return readFileSync(file, 'utf8').trim();
}

export interface CodecServerOptions {
  readonly codec: PayloadCodec;
  readonly token: string;
  readonly port: number;
  readonly host?: string;
  /** Browser origins (the Web UI) allowed to call it. */
  readonly origins: readonly string[];
}

export interface CodecServer {
  /** The endpoint to give the Web UI: it holds the token, so it is printed, never logged. */
  readonly endpoint: string;
  close(): Promise<void>;
}

/**
 * The Web UI's remote codec: `POST …/encode` and `…/decode` with Temporal's
 * JSON payload form. Callers prove the token either in the path (the UI
 * takes only an endpoint URL) or as `Authorization: Bearer`; browsers are
 * let in only from the configured UI origins.
 */
export async function startCodecServer(options: CodecServerOptions): Promise<CodecServer> {
  const host = options.host ?? '127.0.0.1';
  const expected = Buffer.from(options.token);
  const tokenMatches = (given: string | undefined) => {
    const g = Buffer.from(given ?? '');
    return g.length === expected.length && timingSafeEqual(g, expected);
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => send(res, 500, { message: err instanceof Error ? err.message : String(err) }));
  });

  function cors(req: IncomingMessage, res: ServerResponse): boolean {
    const origin = req.headers.origin;
    if (origin === undefined) return true;
    if (!options.origins.includes(origin)) return false;
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Vary', 'Origin');
    res.setHeader('Access-Control-Allow-Methods', 'POST, OPTIONS');
    res.setHeader('Access-Control-Allow-Headers', 'Content-Type, X-Namespace, Authorization');
    res.setHeader('Access-Control-Allow-Credentials', 'true');
    return true;
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (!cors(req, res)) {
      send(res, 403, { message: `origin ${req.headers.origin ?? ''} may not use this codec server (AIRLOCK_CODEC_UI_ORIGIN)` });
      return;
    }
    if (req.method === 'OPTIONS') {
      res.writeHead(204).end();
      return;
    }
    const parts = (req.url ?? '').split('?')[0]?.split('/').filter((p) => p !== '') ?? [];
    const action = parts.pop();
    const bearer = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    if (!tokenMatches(parts.length === 1 ? parts[0] : bearer) || parts.length > 1) {
      send(res, 401, { message: 'a valid codec token is required (in the path, or as a bearer token)' });
      return;
    }
    if (req.method !== 'POST' || (action !== 'encode' && action !== 'decode')) {
      send(res, 404, { message: 'the codec server serves POST /encode and POST /decode' });
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req) {
      size += (chunk as Buffer).length;
      if (size > MAX_BODY_BYTES) {
        send(res, 413, { message: 'request body too large' });
        return;
      }
      chunks.push(chunk as Buffer);
    }
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'));
    } catch {
      send(res, 400, { message: 'the body must be JSON: {"payloads": [...]}' });
      return;
    }
    const parsed = payloadsSchema.safeParse(body);
    if (!parsed.success) {
      send(res, 400, { message: 'the body must be {"payloads": [{"metadata": {...}, "data": "..."}]}' });
      return;
    }
    const payloads = parsed.data.payloads.map(fromJson);
    const out = action === 'encode' ? await options.codec.encode(payloads) : await options.codec.decode(payloads);
    send(res, 200, { payloads: out.map(toJson) });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://${host}:${port}/${options.token}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

function send(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}
