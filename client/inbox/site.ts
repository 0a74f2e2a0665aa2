import type { AirlockConfig } from '../../core/config/config';

/** Where the inbox listens and how browsers reach it. */
export interface InboxSite {
  /** `IP:port` the server binds. */
  readonly listen: string;
  readonly host: string;
  readonly port: number;
  /** The URL reviewers open (and notifications link to), without a trailing slash. */
  readonly publicUrl: string;
  /** Its origin: every POST must come from it, and passkeys are bound to it. */
  readonly origin: string;
  /** The WebAuthn relying party id: the public URL's host name. */
  readonly rpId: string;
  /** The public URL's path (`/airlock` behind a proxy that keeps it), `` at the root. */
  readonly basePath: string;
  /** `Host` headers served: the public host and the listen address (DNS rebinding gets nothing). */
  readonly allowedHosts: ReadonlySet<string>;
}

/**
 * The inbox's addresses: the listen address (`--listen`, else
 * AIRLOCK_INBOX_LISTEN), and the public URL (AIRLOCK_APPROVAL_PAGE_URL, else
 * `http://localhost:<port>`: WebAuthn refuses IP addresses as RP ids, and
 * localhost is a secure context without TLS).
 */
export function inboxSite(config: AirlockConfig, listenOverride?: string): InboxSite {
  const listen = listenOverride ?? config.inbox.listen;
  const colon = listen.lastIndexOf(':');
  const host = listen.slice(0, colon).replace(/^\[|\]$/g, '');
  const port = Number(listen.slice(colon + 1));
  const url = new URL(config.notify.approvalPageUrl ?? `http://localhost:${port}`);
  const basePath = url.pathname.replace(/\/+$/, '');
  const publicUrl = `${url.origin}${basePath}`;
  const hosts = new Set([url.host.toLowerCase(), listen.toLowerCase()]);
  // Loopback listeners are reached as localhost as well as by address.
  if (host === '127.0.0.1' || host === '::1') hosts.add(`localhost:${port}`);
  return { listen, host, port, publicUrl, origin: url.origin, rpId: url.hostname, basePath, allowedHosts: hosts };
}
