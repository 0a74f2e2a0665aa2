import { bindAddress } from '../../core/config/config';
import { UsageError } from '../../client/errors';

export interface ListenAddress {
  /** The IP to bind (brackets removed from IPv6). */
  readonly host: string;
  readonly port: number;
  /** As a Host header names it: `127.0.0.1:8765`, `[::1]:8765`. */
  readonly authority: string;
  /** Every address of the machine, not only loopback: the user asked for it by name. */
  readonly wildcard: boolean;
}

const LOOPBACK = new Set(['127.0.0.1', '::1']);

/** Only this machine can reach it (127.0.0.0/8, ::1). */
export function isLoopback(host: string): boolean {
  return LOOPBACK.has(host) || host.startsWith('127.');
}

/**
 * `--listen [HOST:]PORT`: a bare port listens on 127.0.0.1 only, so
 * nothing is reachable from another machine unless the user names a host.
 */
export function parseListenAddress(text: string): ListenAddress {
  const full = /^[0-9]+$/.test(text) ? `127.0.0.1:${text}` : text;
  if (!bindAddress.safeParse(full).success) {
    throw new UsageError(`--listen takes [HOST:]PORT with an IP address, for example 8765, 127.0.0.1:8765 or [::1]:8765, got ${JSON.stringify(text)}`);
  }
  const colon = full.lastIndexOf(':');
  const host = full.slice(0, colon).replace(/^\[|\]$/g, '');
  const port = Number(full.slice(colon + 1));
  return { host, port, authority: full.toLowerCase(), wildcard: host === '0.0.0.0' || host === '::' };
}

/** Host headers a request may carry: the listen address, localhost for a loopback or wildcard listener, and what the user allowed. */
export function allowedHosts(listen: ListenAddress, extra: readonly string[]): ReadonlySet<string> {
  const hosts = new Set<string>();
  if (!listen.wildcard) hosts.add(listen.authority);
  if (listen.wildcard || LOOPBACK.has(listen.host)) for (const h of ['127.0.0.1', 'localhost', '[::1]']) hosts.add(`${h}:${listen.port}`);
  for (const name of extra) {
    const lower = name.toLowerCase();
    if (!/^(\[[0-9a-f:.]+\]|[a-z0-9]([a-z0-9.-]*[a-z0-9])?)(:[0-9]{1,5})?$/.test(lower)) {
      throw new UsageError(`--allow-host takes a host name or NAME:PORT, for example mcp.home.example or mcp.home.example:443, got ${JSON.stringify(name)}`);
    }
    hosts.add(lower);
    // A name without a port is reached at the listen port too (no proxy in between).
    if (!/:[0-9]+$/.test(lower)) hosts.add(`${lower}:${listen.port}`);
  }
  return hosts;
}

/** Origins of browser pages allowed to call: exactly what the user gave, checked to be origins. */
export function allowedOrigins(given: readonly string[]): ReadonlySet<string> {
  return new Set(
    given.map((o) => {
      const url = URL.canParse(o) ? new URL(o) : undefined;
      if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:') || url.origin !== o.replace(/\/$/, '')) {
        throw new UsageError(`--allow-origin takes an origin (scheme, host and port, no path), for example http://localhost:6274, got ${JSON.stringify(o)}`);
      }
      return url.origin;
    }),
  );
}
