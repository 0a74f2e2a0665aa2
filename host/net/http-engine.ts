import { type IncomingMessage, type OutgoingHttpHeaders, request as httpRequest } from 'node:http';
import type { HostsConfig } from '../../core/config/tools/hosts';
import { type HttpMethod, httpMethods } from '../../core/tools/http-category';
import { formatIp, parseHostIp } from '../../core/util/ip-address';
import { AddressPolicy } from './address-policy';
import { Redactor, isSecretHeader } from './header-secrets';
import { type Exchange, abortReason, abortable, errorCode } from './http-exchange';
import { type Connect, HttpFailed, HttpRefused, type HttpRequestArgs, type HttpResult, type Lookup, type PinnedAnswers, type ResolvedAddress, type ResolvedTarget, systemConnect, systemLookup } from './http-request';

/**
 * The engine behind `http_request`. Each hop's host is resolved once, every
 * answer is checked against the address policy, and the socket is opened
 * to that checked address itself (the HTTP layer never resolves a name), so
 * a DNS answer that changes between check and connect cannot redirect it.
 * Redirects are followed here, hop by hop, each checked the same way.
 */

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

