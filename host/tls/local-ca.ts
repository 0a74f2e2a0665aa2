/**
 * host/tls/local-ca — HTTPS for a page served from this machine without a
 * public certificate authority: a local CA (made once, trusted once per
 * phone) and a short-lived server certificate it signs for the names the
 * page is reached by. Pure JS: keys are made and certificates signed with
 * Node's WebCrypto, certificates encoded by @peculiar/x509.
 *
 * Files in its folder (0700), every one 0600:
 *   ca.crt      the CA certificate (PEM): the file a phone imports
 *   ca.key      the CA's private key
 *   server.crt  the server certificate, signed by the CA
 *   server.key  its private key
 *   .lock       held while one process reads or makes them
 */

// @peculiar/x509 resolves its parts through tsyringe, which needs the Reflect metadata API before it loads.
import { type X509Certificate as NodeCertificate } from 'node:crypto';
import { closeSync, openSync, rmSync, statSync } from 'node:fs';
import { join } from 'node:path';
import 'reflect-metadata';
import { LocalCaError, certificateHosts, commonName, createCa, errorCode, errorText, issueServer, loadCa, loadServer, permits, prepareFolder, sanOf, serverFits, writePrivate } from './certificates';

export interface LocalTls {
  /** The CA certificate's file, the one to send to a phone. */
  readonly caFile: string;
  readonly caPem: string;
  /** SHA-256 of the CA certificate, `AB:CD:…`, as a phone's certificate details show it. */
  readonly caFingerprint: string;
  /** Its common name, `airlock local CA (<label>)`, as a phone's trust settings list it. */
  readonly caName: string;
  /** The server certificate and its key (PEM), for `node:https`. */
  readonly certPem: string;
  readonly keyPem: string;
  /** The names and addresses the server certificate carries. */
  readonly hosts: readonly string[];
  /** When the server certificate expires. */
  readonly notAfter: Date;
  /** What this call made: a new CA (and certificate), a new server certificate, or nothing. */
  readonly issued: 'ca' | 'certificate' | undefined;
}

export interface LocalTlsOptions {
  /** The folder of the four files; created 0700. */
  readonly dir: string;
  /** Every name and address the page is reached by; names that cannot be in a certificate are left out. */
  readonly hosts: readonly string[];
  /** Shown in the CA's name, so a phone's settings say which machine it is for. */
  readonly label: string;
  readonly now?: Date;
}

/**
 * The CA and a server certificate for `hosts`: read from `dir` when there,
 * made on first use. The server certificate is issued again (by the same
 * CA) when the names it needs changed, when it has less than RENEW_DAYS
 * left, or when it does not match its key or the CA.
 */
export async function ensureLocalTls(options: LocalTlsOptions): Promise<LocalTls> {
  const hosts = certificateHosts(options.hosts);
  if (hosts.length === 0) throw new LocalCaError(`none of ${JSON.stringify(options.hosts)} can be named in a certificate; give a host name or an IP address`);
  prepareFolder(options.dir);
  // One maker at a time (two starts, or a start and a running inbox's renewal): never a key from one and a certificate from the other.
  const release = await lockFolder(options.dir);
  try {
    return await ensureLocked(options, hosts);
  } finally {
    release();
  }
}

/** How long a lock may be held before it counts as left by a process that died holding it. */
const LOCK_STALE_MS = 60_000;
const LOCK_WAIT_MS = 30_000;

/** Takes `<dir>/.lock` (created exclusively); waits for another holder, takes over a stale one. */
async function lockFolder(dir: string): Promise<() => void> {
  const file = join(dir, '.lock');
  const deadline = Date.now() + LOCK_WAIT_MS;
  for (;;) {
    try {
      closeSync(openSync(file, 'wx', 0o600));
      return () => rmSync(file, { force: true });
    } catch (err) {
      if (errorCode(err) !== 'EEXIST') throw new LocalCaError(`cannot lock ${dir} (${errorText(err)}); make the data folder writable by this user`, { cause: err });
    }
    const age = Date.now() - (statIfThere(file)?.mtimeMs ?? Date.now());
    if (age > LOCK_STALE_MS) rmSync(file, { force: true });
    else if (Date.now() > deadline) throw new LocalCaError(`${file} is held by another airlock inbox making its certificates; wait for it, or delete the file if no inbox runs`);
    else await new Promise((r) => setTimeout(r, 100));
  }
}

function statIfThere(file: string): { mtimeMs: number } | undefined {
  try {
    return statSync(file);
  } catch {
    return undefined;
  }
}

async function ensureLocked(options: LocalTlsOptions, hosts: readonly string[]): Promise<LocalTls> {
  const { dir } = options;
  const now = options.now ?? new Date();
  const files = { caCert: join(dir, 'ca.crt'), caKey: join(dir, 'ca.key'), cert: join(dir, 'server.crt'), key: join(dir, 'server.key') };

  let ca = loadCa({ dir, certFile: files.caCert, keyFile: files.caKey, now });
  let issued: LocalTls['issued'];
  // The CA may sign only for the names it was made for (Name Constraints): another name needs a new CA, trusted again.
  if (ca === undefined || !permits(ca.certPem, hosts)) {
    ca = await createCa({ label: options.label, hosts, now });
    // The key first: a certificate without its key is refused, a key without its certificate is made again.
    writePrivate(files.caKey, ca.keyPem);
    writePrivate(files.caCert, ca.certPem);
    issued = 'ca';
  }

  // A new CA never reuses a certificate signed by the one before.
  const current = issued === undefined ? loadServer({ dir, certFile: files.cert, keyFile: files.key }) : undefined;
  let server: { readonly certPem: string; readonly keyPem: string; readonly cert: NodeCertificate };
  if (current !== undefined && serverFits({ server: current, ca: ca.cert, hosts, now })) {
    server = current;
  } else {
    server = await issueServer({ ca, hosts, now });
    writePrivate(files.key, server.keyPem);
    writePrivate(files.cert, server.certPem);
    issued ??= 'certificate';
  }
  return {
    caFile: files.caCert,
    // Re-encoded from the parsed certificate: whatever else a hand-edited file holds (a key) is never served.
    caPem: ca.cert.toString(),
    caFingerprint: ca.cert.fingerprint256,
    caName: commonName(ca.certPem),
    certPem: server.certPem,
    keyPem: server.keyPem,
    hosts: sanOf(server.certPem),
    notAfter: new Date(server.cert.validTo),
    issued,
  };
}

