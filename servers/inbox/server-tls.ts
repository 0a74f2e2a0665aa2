import { readFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { dirname, join } from 'node:path';
import type { LocalTls } from '../../host/tls/local-ca';
import { type InboxTls } from './site';

/** The page's TLS: the local CA's certificate, loaded or issued, and renewed in time. */

export const TLS_CHECK_MS = 12 * 3_600_000;

/** The WebAuthn browser library as its package ships it, read once. */
export function webauthnBundle(): Buffer {
  const main = require.resolve('@simplewebauthn/browser');
  return readFileSync(join(dirname(main), '..', 'dist', 'bundle', 'index.umd.min.js'));
}

/** The local CA and server certificate (host/tls, loaded only when TLS is on). */
export async function localTls(tls: InboxTls): Promise<LocalTls> {
  const { ensureLocalTls } = await import('../../host/tls/local-ca');
  return ensureLocalTls({ dir: tls.dir, hosts: tls.hosts, label: hostname() });
}

/** The page's ask for an undo: the job's delete, and the passkey's answer to an identification challenge. */
