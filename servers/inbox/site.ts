import { hostname } from 'node:os';
import { join } from 'node:path';
import type { AirlockConfig } from '../../core/config/config';
import { ConfigError } from '../../core/util/errors';
import { statePaths } from '../../host/config/paths';

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
  /**
   * Served over HTTPS by the inbox itself (`--tls`, AIRLOCK_INBOX_TLS), with
   * a certificate from its local CA: the folder of both, and every name the
   * certificate must carry. Unset: plain HTTP (localhost, or behind a proxy).
   */
  readonly tls: InboxTls | undefined;
}

export interface InboxTls {
  readonly dir: string;
  readonly hosts: readonly string[];
}

/** Where the page serves its CA certificate, for a phone to download: the certificate only, never a key. */
export const CA_CERT_PATH = '/ca.crt';

/** The inbox's local CA and certificate, under the data folder. */
export function inboxTlsDir(config: AirlockConfig): string {
  return join(statePaths(config).dataDir, 'inbox', 'tls');
}

/**
 * The inbox's addresses: the listen address (`--listen`, else
 * AIRLOCK_INBOX_LISTEN), and the public URL (AIRLOCK_APPROVAL_PAGE_URL, else
 * `http://localhost:<port>`, `https://` with TLS: WebAuthn refuses IP
 * addresses as RP ids, and localhost is a secure context without TLS).
 */
export function inboxSite(config: AirlockConfig, listenOverride?: string): InboxSite {
  const listen = listenOverride ?? config.inbox.listen;
  const colon = listen.lastIndexOf(':');
  const host = listen.slice(0, colon).replace(/^\[|\]$/g, '');
  const port = Number(listen.slice(colon + 1));
  const scheme = config.inbox.tls ? 'https' : 'http';
  const url = new URL(config.notify.approvalPageUrl ?? `${scheme}://localhost:${port}`);
  // The page would be served at one scheme and opened at the other: no browser would reach it.
  if (config.inbox.tls && url.protocol !== 'https:') {
    throw new ConfigError([
      { variable: 'AIRLOCK_APPROVAL_PAGE_URL', message: `is ${url.origin}, but the inbox serves HTTPS itself (--tls or AIRLOCK_INBOX_TLS); set it to https://${url.host}${url.pathname.replace(/\/+$/, '')}` },
    ]);
  }
  const basePath = url.pathname.replace(/\/+$/, '');
  const publicUrl = `${url.origin}${basePath}`;
  const hosts = new Set([url.host.toLowerCase(), listen.toLowerCase()]);
  // Loopback listeners are reached as localhost as well as by address.
  if (host === '127.0.0.1' || host === '::1') hosts.add(`localhost:${port}`);
  const tls = config.inbox.tls ? { dir: inboxTlsDir(config), hosts: tlsHosts({ publicHost: url.hostname, listenHost: host }) } : undefined;
  return { listen, host, port, publicUrl, origin: url.origin, rpId: url.hostname, basePath, allowedHosts: hosts, tls };
}

/** A URL host name (`url.hostname`) only this machine reaches. */
export function isLoopbackHost(host: string): boolean {
  return host === 'localhost' || host.endsWith('.localhost') || host === '[::1]' || /^127\./.test(host);
}

/** Every name the page may be reached by: the public host, the listen address unless it is every address, this machine's names. */
function tlsHosts(input: { publicHost: string; listenHost: string }): string[] {
  const listenHost = input.listenHost === '0.0.0.0' || input.listenHost === '::' ? [] : [input.listenHost];
  return [input.publicHost, ...listenHost, 'localhost', '127.0.0.1', hostname()];
}
