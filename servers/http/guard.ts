import type { IncomingMessage, ServerResponse } from 'node:http';
import type { InboxSite } from '../inbox/site';

/** The largest JSON body a POST may carry (an assertion and a decision are a few KiB). */
export const MAX_BODY_BYTES = 64 * 1024;

/** A request refused with a status and one line saying why. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/**
 * Sent with every response: no script but our own files, never framed, no
 * Referer (a registration link's token sits in the fragment, but a page's
 * path still names jobs), nothing cached.
 */
export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'Content-Security-Policy': "default-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'; object-src 'none'",
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-store',
  'X-Frame-Options': 'DENY',
  'Cross-Origin-Opener-Policy': 'same-origin',
  'Cross-Origin-Resource-Policy': 'same-origin',
};

/** Only the public host and the listen address are served: a rebound DNS name reaches nothing. */
export function checkHost(req: IncomingMessage, site: InboxSite): void {
  const host = (req.headers.host ?? '').toLowerCase();
  if (!site.allowedHosts.has(host)) throw new HttpError(421, `this server answers only for ${[...site.allowedHosts].join(' or ')}, not for host ${JSON.stringify(host.slice(0, 100))}`);
}

/**
 * A POST must be JSON from the page itself: `Origin` equal to the public
 * origin (a form or script on another site cannot send one), and
 * `Sec-Fetch-Site: same-origin` when the browser sends it.
 */
export function checkPost(req: IncomingMessage, site: InboxSite): void {
  const type = (req.headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type !== 'application/json') throw new HttpError(415, 'send JSON (Content-Type: application/json)');
  const origin = req.headers.origin;
  if (origin !== site.origin) {
    throw new HttpError(403, origin === undefined ? `the request has no Origin; open the page at ${site.publicUrl}` : `requests from ${origin.slice(0, 200)} are refused; open the page at ${site.publicUrl}`);
  }
  const fetchSite = req.headers['sec-fetch-site'];
  if (fetchSite !== undefined && fetchSite !== 'same-origin') throw new HttpError(403, `cross-site requests are refused (Sec-Fetch-Site: ${String(fetchSite).slice(0, 40)})`);
}

/** The body as JSON, at most `MAX_BODY_BYTES`. */
export async function readJson(req: IncomingMessage): Promise<unknown> {
  return readJsonBody(req, { maxBytes: MAX_BODY_BYTES, notJson: 'the body is not valid JSON' });
}

/** A request's JSON body, at most `maxBytes` (413 beyond), or an `HttpError` saying what was wrong with it. */
export async function readJsonBody(req: IncomingMessage, limits: { readonly maxBytes: number; readonly notJson: string }): Promise<unknown> {
  const { maxBytes } = limits;
  const declared = Number(req.headers['content-length'] ?? '0');
  if (declared > maxBytes) throw new HttpError(413, `the body is larger than ${maxBytes} bytes`);
  const chunks: Buffer[] = [];
  let size = 0;
  try {
    for await (const chunk of req) {
      const buf = Buffer.isBuffer(chunk) ? chunk : Buffer.from(String(chunk));
      size += buf.length;
      if (size > maxBytes) throw new HttpError(413, `the body is larger than ${maxBytes} bytes`);
      chunks.push(buf);
    }
  } catch (err) {
    // A client that hangs up midway is its own problem, not a failure of the server to log.
    if (err instanceof HttpError) throw err;
    throw new HttpError(400, 'the body was cut off before its end');
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8'));
  } catch {
    throw new HttpError(400, limits.notJson);
  }
}

export function send(res: ServerResponse, status: number, type: string, body: string | Buffer, extra: Record<string, string> = {}): void {
  res.writeHead(status, { ...SECURITY_HEADERS, 'Content-Type': type, 'Content-Length': String(Buffer.byteLength(body)), ...extra });
  res.end(body);
}

export function sendJson(res: ServerResponse, status: number, value: unknown): void {
  send(res, status, 'application/json; charset=utf-8', JSON.stringify(value));
}

/** One line: `{"error": "..."}`. */
export function sendError(res: ServerResponse, status: number, message: string): void {
  sendJson(res, status, { error: message.replace(/\s+/g, ' ') });
}
