import { lookup as dnsLookup } from 'node:dns/promises';
import { type Socket, connect as netConnect } from 'node:net';
import { connect as tlsConnect } from 'node:tls';
import { type HttpMethod } from '../../core/tools/http-category';
import { AirlockError } from '../../core/util/errors';
import { ToolRefusal } from '../fs/roots';

/** What an HTTP call asks and answers, the errors it ends in, and how a name is resolved and a socket connected (the system's, unless a test gives its own). */

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
