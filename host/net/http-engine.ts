import { lookup as dnsLookup } from 'node:dns/promises';
import { request as httpRequest, type IncomingMessage, type OutgoingHttpHeaders } from 'node:http';
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { AirlockError } from '../../core/util/errors';
import { formatIp, parseHostIp } from '../../core/util/ip-address';
import type { HostsConfig } from '../../core/config/tools/hosts';
import { httpMethods, type HttpMethod } from '../../core/tools/http-category';
import { ToolRefusal } from '../fs/roots';
import { AddressPolicy } from './address-policy';
import { isSecretHeader, Redactor } from './header-secrets';

/**
 * The engine behind `http_request`. Each hop's host is resolved once, every
 * answer is checked against the address policy, and the socket is opened
 * to that checked address itself (the HTTP layer never resolves a name), so
 * a DNS answer that changes between check and connect cannot redirect it.
 * Redirects are followed here, hop by hop, each checked the same way.
 */

export interface ResolvedAddress {
  readonly address: string;
  readonly family: 4 | 6;
}

/** Every address a name resolves to; injectable so tests can answer differently on each call. */
export type Lookup = (hostname: string) => Promise<readonly ResolvedAddress[]>;

export interface ConnectTarget {
  /** The checked IP address: the only place this socket may go. */
  readonly address: string;
  readonly port: number;
  readonly tls: boolean;
  /** TLS server name (SNI and certificate check); undefined for an IP literal, checked against the address. */
  readonly servername: string | undefined;
}

export type Connect = (target: ConnectTarget) => Socket;

export const systemLookup: Lookup = async (hostname) => {
  const answers = await dnsLookup(hostname, { all: true, verbatim: true });
  return answers.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

export const systemConnect: Connect = (target) =>
  target.tls
    ? tlsConnect({ host: target.address, port: target.port, servername: target.servername, ALPNProtocols: ['http/1.1'] })
    : netConnect({ host: target.address, port: target.port });

/** The engine refused the call on its own checks; nothing was sent (or, for a redirect, nothing more). */
export class HttpRefused extends ToolRefusal {
  override name = 'HttpRefused';
}

/** The request was attempted and failed: timeout, connection or protocol error. Message already masked. */
export class HttpFailed extends AirlockError {
  override name = 'HttpFailed';
}

export interface HttpRequestArgs {
  readonly method: HttpMethod;
  readonly url: string;
  readonly headers?: Readonly<Record<string, string>>;
  readonly body?: string;
}

/** A host's answers from an earlier lookup, used instead of resolving it again. */
export interface PinnedAnswers {
  readonly hostname: string;
  readonly addresses: readonly string[];
}

/** Where one URL leads: checked and resolved once. */
export interface ResolvedTarget {
  readonly url: URL;
  /** The host as the URL names it, without IPv6 brackets. */
  readonly hostname: string;
  readonly port: number;
  readonly tls: boolean;
  /** Every answer, all checked; the first is connected to. */
  readonly addresses: readonly string[];
}

export interface HttpResult {
  readonly method: HttpMethod;
  readonly status: number;
  readonly statusText: string;
  /** Where the last hop went (masked) and the address it connected to. */
  readonly url: string;
  readonly address: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body: string;
  readonly bodyBytes: number;
  readonly truncated: boolean;
  readonly redirects: ReadonlyArray<{ readonly status: number; readonly url: string }>;
  /** Set when a redirect was not followed, and why. */
  readonly redirectNotFollowed?: string;
}

/** Headers the engine sets itself, or that would let a caller smuggle a second request or another host. */
const RESERVED_HEADERS = new Set(['host', 'content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'te', 'trailer', 'expect', 'proxy-connection']);
const TOKEN = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const REDIRECTS = new Set([301, 302, 303, 307, 308]);
const MAX_URL_CHARS = 8192;

export interface HttpEngineOptions {
  readonly hosts: HostsConfig;
  readonly lookup?: Lookup;
  readonly connect?: Connect;
}

function isTextual(contentType: string | undefined): boolean {
  if (contentType === undefined) return true;
  return /^(text\/|application\/([a-z0-9.+-]*\+)?(json|xml|javascript|x-www-form-urlencoded|yaml|x-yaml)\b)/i.test(contentType);
}

export class HttpEngine {
  readonly policy: AddressPolicy;
  private readonly lookup: Lookup;
  private readonly connect: Connect;

  constructor(private readonly options: HttpEngineOptions) {
    this.policy = new AddressPolicy(options.hosts);
    this.lookup = options.lookup ?? systemLookup;
    this.connect = options.connect ?? systemConnect;
  }

  get limits(): HostsConfig {
    return this.options.hosts;
  }

  /** Parses and checks a URL's form (no network). */
  parseUrl(text: string): URL {
    if (text.length > MAX_URL_CHARS) throw new HttpRefused(`the URL is longer than ${MAX_URL_CHARS} characters`);
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      throw new HttpRefused('the URL does not parse; give an absolute http:// or https:// URL');
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new HttpRefused(`only http and https URLs are allowed (got ${url.protocol})`);
    if (url.username !== '' || url.password !== '') throw new HttpRefused('credentials in the URL are not allowed; send them in an Authorization header');
    if (url.hostname === '') throw new HttpRefused('the URL has no host');
    return url;
  }

  /**
   * Resolves a URL's host once and checks every answer. Used for each hop
   * and by `prepare`/`revalidate` to show and re-check where a call goes.
   */
  async resolve(text: string | URL, signal?: AbortSignal, pinned?: PinnedAnswers): Promise<ResolvedTarget> {
    const url = typeof text === 'string' ? this.parseUrl(text) : text;
    const hostname = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
    const tls = url.protocol === 'https:';
    const port = url.port === '' ? (tls ? 443 : 80) : Number(url.port);
    const literal = parseHostIp(url.hostname);
    let answers: readonly string[];
    if (literal !== undefined) {
      answers = [formatIp(literal)];
    } else {
      const unlisted = this.policy.checkName(hostname);
      if (unlisted !== undefined) throw new HttpRefused(unlisted);
      let found: readonly ResolvedAddress[];
      try {
        found =
          pinned !== undefined && pinned.hostname.toLowerCase() === hostname.toLowerCase()
            ? pinned.addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }))
            : await abortable(this.lookup(hostname), signal);
      } catch (err) {
        if (signal?.aborted === true) throw err;
        throw new HttpFailed(`${hostname} could not be resolved (${errorCode(err)})`);
      }
      answers = found.map((a) => a.address);
      if (answers.length === 0) throw new HttpFailed(`${hostname} has no address`);
    }
    const addresses: string[] = [];
    for (const answer of answers) {
      const verdict = this.policy.check(hostname, answer, literal !== undefined);
      if (!verdict.ok) throw new HttpRefused(verdict.reason);
      addresses.push(verdict.address);
    }
    return { url, hostname, port, tls, addresses };
  }

  private checkHeaders(headers: Readonly<Record<string, string>>): void {
    const seen = new Set<string>();
    for (const [name, value] of Object.entries(headers)) {
      const lower = name.toLowerCase();
      if (!TOKEN.test(name)) throw new HttpRefused(`header name ${JSON.stringify(name.slice(0, 64))} is not a valid HTTP header name`);
      if (RESERVED_HEADERS.has(lower)) throw new HttpRefused(`header ${name} is set by the tool itself; leave it out`);
      if (seen.has(lower)) throw new HttpRefused(`header ${name} is given twice`);
      seen.add(lower);
      if (/[\r\n\0]/.test(value)) throw new HttpRefused(`header ${name} has a line break or NUL in its value`);
    }
  }

  /**
   * Sends the request, following redirects that stay allowed; resolves with
   * a masked result. `pinned`: the first hop's host was resolved just
   * before (prepare); its answers are checked again and used as they are.
   */
  async send(args: HttpRequestArgs, pinned?: PinnedAnswers): Promise<HttpResult> {
    const headers = args.headers ?? {};
    const redactor = new Redactor(headers);
    try {
      return await this.sendChecked(args, headers, redactor, pinned);
    } catch (err) {
      if (err instanceof HttpRefused) throw new HttpRefused(redactor.text(err.message));
      if (err instanceof HttpFailed) throw new HttpFailed(redactor.text(err.message));
      throw new HttpFailed(redactor.text(`request failed: ${errorCode(err)}`));
    }
  }

  private async sendChecked(args: HttpRequestArgs, headers: Readonly<Record<string, string>>, redactor: Redactor, pinned: PinnedAnswers | undefined): Promise<HttpResult> {
    const limits = this.options.hosts;
    if (!httpMethods.includes(args.method)) throw new HttpRefused(`method ${String(args.method)} is not offered (${httpMethods.join(', ')})`);
    this.checkHeaders(headers);
    const body = args.body === undefined ? undefined : Buffer.from(args.body, 'utf8');
    if (body !== undefined && (args.method === 'GET' || args.method === 'HEAD')) throw new HttpRefused(`a ${args.method} request has no body`);
    if (body !== undefined && body.length > limits.maxRequestBytes) {
      throw new HttpRefused(`the body is ${body.length} bytes, more than the ${limits.maxRequestBytes} allowed (hosts.maxRequestBytes)`);
    }
    const timeoutMs = Math.round(limits.timeoutSeconds * 1000);
    const controller = new AbortController();
    const timer = setTimeout(() => controller.abort(new HttpFailed(`no complete response within ${limits.timeoutSeconds} s (hosts.timeoutSeconds)`)), timeoutMs);
    try {
      let hop = { url: this.parseUrl(args.url), method: args.method, headers: { ...headers }, body };
      const redirects: Array<{ status: number; url: string }> = [];
      for (;;) {
        const target = await this.resolve(hop.url, controller.signal, redirects.length === 0 ? pinned : undefined).catch((err: unknown) => {
          if (err instanceof HttpRefused && redirects.length > 0) throw new HttpRefused(`redirect to ${hop.url.href} refused: ${err.message}`);
          throw err;
        });
        const address = target.addresses[0]!;
        const response = await this.exchange(hop, target, address, controller.signal);
        const location = response.message.headers.location;
        const result = (extra: Partial<HttpResult>): HttpResult => ({
          method: args.method,
          status: response.message.statusCode ?? 0,
          statusText: response.message.statusMessage ?? '',
          url: redactor.text(hop.url.href),
          address,
          headers: redactor.headers(response.message.headers),
          ...this.bodyText(response, redactor),
          redirects,
          ...extra,
        });
        const status = response.message.statusCode ?? 0;
        if (!REDIRECTS.has(status) || location === undefined) return result({});
        let next: URL;
        try {
          next = this.parseUrl(new URL(location, hop.url).href);
        } catch (err) {
          return result({ redirectNotFollowed: err instanceof HttpRefused ? err.message : 'the Location header does not parse' });
        }
        const sameOrigin = next.origin === hop.url.origin;
        const keepsMethod = status === 307 || status === 308;
        const safe = hop.method === 'GET' || hop.method === 'HEAD';
        // Sending data on to another host is a new send the reviewer never saw.
        if (!sameOrigin && !safe) {
          return result({ redirectNotFollowed: `a ${hop.method} request is not sent on to another host (${redactor.text(next.origin)}); ask again with that URL if it is meant` });
        }
        if (redirects.length >= limits.maxRedirects) {
          return result({ redirectNotFollowed: `more than ${limits.maxRedirects} redirects (hosts.maxRedirects)` });
        }
        redirects.push({ status, url: redactor.text(next.href) });
        const nextHeaders: Record<string, string> = {};
        for (const [name, value] of Object.entries(hop.headers)) {
          // Credentials stay with the origin they were given for.
          if (!sameOrigin && isSecretHeader(name, value)) continue;
          nextHeaders[name] = value;
        }
        const toGet = !keepsMethod && hop.method !== 'HEAD' && (status === 303 || hop.method === 'POST');
        if (toGet) for (const name of Object.keys(nextHeaders)) if (name.toLowerCase() === 'content-type') delete nextHeaders[name];
        hop = { url: next, method: toGet ? 'GET' : hop.method, headers: nextHeaders, body: toGet ? undefined : hop.body };
      }
    } catch (err) {
      if (controller.signal.aborted && controller.signal.reason instanceof HttpFailed) throw controller.signal.reason;
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  private bodyText(response: Exchange, redactor: Redactor): Pick<HttpResult, 'body' | 'bodyBytes' | 'truncated'> {
    const type = response.message.headers['content-type'];
    const encoding = response.message.headers['content-encoding'];
    const bytes = response.body.length;
    let text: string;
    if (encoding !== undefined && encoding !== 'identity') text = `(${bytes} bytes, content-encoding ${encoding})`;
    else if (!isTextual(type)) text = bytes === 0 ? '' : `(${bytes} bytes of ${type ?? 'binary data'})`;
    else text = response.body.toString('utf8');
    return { body: redactor.text(text), bodyBytes: bytes, truncated: response.truncated };
  }

  /** One request on one socket to one checked address. */
  private exchange(
    hop: { url: URL; method: HttpMethod; headers: Record<string, string>; body: Buffer | undefined },
    target: ResolvedTarget,
    address: string,
    signal: AbortSignal,
  ): Promise<Exchange> {
    const maxBytes = this.options.hosts.maxResponseBytes;
    const defaultPort = target.tls ? 443 : 80;
    const hostHeader = target.port === defaultPort ? target.url.host.replace(/:\d+$/, '') : target.url.host;
    const headers: OutgoingHttpHeaders = { ...hop.headers, host: hostHeader, connection: 'close' };
    if (hop.body !== undefined) headers['content-length'] = hop.body.length;
    const connect = this.connect;
    const literal = parseHostIp(target.url.hostname) !== undefined;
    return new Promise<Exchange>((resolve, reject) => {
      const req = httpRequest(
        {
          method: hop.method,
          // Only for messages: the socket comes from createConnection, which ignores it.
          host: address,
          port: target.port,
          path: `${target.url.pathname}${target.url.search}`,
          headers,
          signal,
          // No agent: the socket is opened to the checked address and used once.
          createConnection: () => connect({ address, port: target.port, tls: target.tls, servername: literal ? undefined : target.hostname }),
        },
        (message: IncomingMessage) => {
          const chunks: Buffer[] = [];
          let size = 0;
          let truncated = false;
          message.on('data', (chunk: Buffer) => {
            if (truncated) return;
            const room = maxBytes - size;
            if (chunk.length > room) {
              chunks.push(chunk.subarray(0, room));
              size += room;
              truncated = true;
              // Enough read: the rest is not wanted.
              resolve({ message, body: Buffer.concat(chunks), truncated });
              req.destroy();
              return;
            }
            chunks.push(chunk);
            size += chunk.length;
          });
          message.on('end', () => resolve({ message, body: Buffer.concat(chunks), truncated }));
          message.on('error', (err) => reject(err));
          message.on('aborted', () => reject(new HttpFailed('the server closed the connection before the whole response arrived')));
        },
      );
      req.on('error', (err) => reject(signal.aborted ? abortReason(signal) : new HttpFailed(`${hop.method} ${target.url.origin} via ${address}: ${errorCode(err)}`)));
      req.end(hop.body);
    });
  }
}

interface Exchange {
  readonly message: IncomingMessage;
  readonly body: Buffer;
  readonly truncated: boolean;
}

function errorCode(err: unknown): string {
  if (typeof err === 'object' && err !== null) {
    const code = 'code' in err && typeof err.code === 'string' ? err.code : undefined;
    const message = 'message' in err && typeof err.message === 'string' ? err.message : undefined;
    return code ?? message ?? 'unknown error';
  }
  return String(err);
}

/** Why a signal aborted: the engine's own timeout error, or a plain one. */
function abortReason(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new HttpFailed('the request was cancelled');
}

function abortable<T>(promise: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (signal === undefined) return promise;
  if (signal.aborted) return Promise.reject(abortReason(signal));
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(abortReason(signal));
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (v) => {
        signal.removeEventListener('abort', onAbort);
        resolve(v);
      },
      (e: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(e instanceof Error ? e : new Error(String(e)));
      },
    );
  });
}

/** The result as the model reads it. Everything in it is masked already. */
export function formatHttpResult(result: HttpResult): string {
  const lines = [`HTTP ${result.status} ${result.statusText} (${result.method} ${result.url}, connected to ${result.address})`];
  for (const r of result.redirects) lines.push(`redirected (${r.status}) to ${r.url}`);
  if (result.redirectNotFollowed !== undefined) lines.push(`redirect not followed: ${result.redirectNotFollowed}`);
  for (const [name, value] of Object.entries(result.headers)) lines.push(`${name}: ${value}`);
  lines.push('', result.body);
  if (result.truncated) lines.push(`[body cut at ${result.bodyBytes} bytes (hosts.maxResponseBytes)]`);
  return lines.join('\n');
}
