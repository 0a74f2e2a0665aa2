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
import 'reflect-metadata';
import { createPrivateKey, randomBytes, webcrypto, X509Certificate as NodeCertificate, type KeyObject } from 'node:crypto';
import { chmodSync, closeSync, mkdirSync, openSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { AsnConvert } from '@peculiar/asn1-schema';
import { GeneralName, GeneralSubtree, GeneralSubtrees, id_ce_nameConstraints, NameConstraints } from '@peculiar/asn1-x509';
import * as x509 from '@peculiar/x509';
import { AirlockError } from '../../core/util/errors';

/** The local CA's files cannot be read, written or used; the message says which and what to do. */
export class LocalCaError extends AirlockError {
  override name = 'LocalCaError';
}

/** Ten years: a phone trusts it once. */
export const CA_DAYS = 3650;
/** Under the 397 days Apple and Chrome accept for a server certificate. */
export const SERVER_DAYS = 365;
/** A server certificate this close to its end is issued again. */
export const RENEW_DAYS = 30;

const DAY_MS = 86_400_000;
// Phones whose clock runs a little behind still accept a certificate made just now.
const BACKDATE_MS = 3_600_000;
const KEY_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256' };
const SIGNING_ALGORITHM = { name: 'ECDSA', hash: 'SHA-256' };

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

/**
 * The names a certificate can carry, as `SubjectAltName` entries compare:
 * lower case, IPv6 in its short form, no brackets or trailing dot, each once.
 */
export function certificateHosts(hosts: readonly string[]): string[] {
  const out = new Set<string>();
  for (const raw of hosts) {
    const host = raw.trim().toLowerCase().replace(/^\[|\]$/g, '').replace(/\.$/, '');
    if (isIP(host) === 4) out.add(host);
    else if (isIP(host) === 6) out.add(new URL(`http://[${host}]/`).hostname.replace(/^\[|\]$/g, ''));
    else if (/^[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)*$/.test(host) && host.length <= 253) out.add(host);
  }
  return [...out];
}

function commonName(certPem: string): string {
  return new x509.X509Certificate(certPem).subjectName.getField('CN')[0] ?? 'airlock local CA';
}

/** The DNS names and IP addresses in a certificate's SubjectAltName. */
export function sanOf(certPem: string): string[] {
  const names = new x509.X509Certificate(certPem).getExtension(x509.SubjectAlternativeNameExtension)?.names.toJSON() ?? [];
  return names.filter((n) => n.type === 'dns' || n.type === 'ip').map((n) => n.value.toLowerCase());
}

interface Ca {
  readonly certPem: string;
  readonly keyPem: string;
  readonly cert: NodeCertificate;
  readonly key: KeyObject;
}

function loadCa(input: { dir: string; certFile: string; keyFile: string; now: Date }): Ca | undefined {
  const certPem = readIfThere(input.certFile);
  // No certificate: none was made, or the first start stopped before writing it; no phone can trust it yet.
  if (certPem === undefined) return undefined;
  const remake = `delete the folder ${input.dir} to make a new CA, and trust the new one on your phones`;
  const keyPem = readIfThere(input.keyFile);
  if (keyPem === undefined) throw new LocalCaError(`${input.keyFile} is missing, so the CA in ${input.certFile} cannot sign; ${remake}`);
  const cert = parseCertificate(certPem, input.certFile, remake);
  const key = parseKey(keyPem, input.keyFile, remake);
  if (!cert.ca || !cert.checkPrivateKey(key)) throw new LocalCaError(`${input.certFile} is not a CA certificate whose key is ${input.keyFile}; ${remake}`);
  if (new Date(cert.validTo).getTime() <= input.now.getTime()) throw new LocalCaError(`the CA in ${input.certFile} expired on ${new Date(cert.validTo).toISOString()}; ${remake}`);
  return { certPem, keyPem, cert, key };
}

function loadServer(input: { dir: string; certFile: string; keyFile: string }): { certPem: string; keyPem: string; cert: NodeCertificate; key: KeyObject } | undefined {
  const certPem = readIfThere(input.certFile);
  const keyPem = readIfThere(input.keyFile);
  if (certPem === undefined || keyPem === undefined) return undefined;
  const reissue = `delete ${input.certFile} and ${input.keyFile}: the next start issues them again from the same CA`;
  return { certPem, keyPem, cert: parseCertificate(certPem, input.certFile, reissue), key: parseKey(keyPem, input.keyFile, reissue) };
}

/** Still good: its key, signed by this CA, for exactly these names, and not near its end. */
function serverFits(input: { server: { cert: NodeCertificate; key: KeyObject; certPem: string }; ca: NodeCertificate; hosts: readonly string[]; now: Date }): boolean {
  const { cert } = input.server;
  if (!cert.checkPrivateKey(input.server.key) || !cert.checkIssued(input.ca) || !cert.verify(input.ca.publicKey)) return false;
  if (new Date(cert.validTo).getTime() - input.now.getTime() < RENEW_DAYS * DAY_MS) return false;
  const have = sanOf(input.server.certPem).sort();
  const want = [...input.hosts].sort();
  return have.length === want.length && have.every((h, i) => h === want[i]);
}

/**
 * The CA's Name Constraints: it may sign for these names (and names below
 * them) and these exact addresses only, so its key, if it ever leaked,
 * could not impersonate any other site to the phones that trust it.
 */
function nameConstraints(hosts: readonly string[]): x509.Extension {
  const subtree = (host: string) =>
    new GeneralSubtree({ base: new GeneralName(isIP(host) === 0 ? { dNSName: host } : { iPAddress: `${host}/${isIP(host) === 4 ? 32 : 128}` }) });
  const value = AsnConvert.serialize(new NameConstraints({ permittedSubtrees: new GeneralSubtrees(hosts.map(subtree)) }));
  return new x509.Extension(id_ce_nameConstraints, true, value);
}

/** The names a CA's Name Constraints permit (DNS names, and addresses as `ip/prefix`); none when it has no constraints. */
export function permittedOf(certPem: string): string[] {
  const ext = new x509.X509Certificate(certPem).getExtension(id_ce_nameConstraints);
  if (ext === null) return [];
  const parsed = AsnConvert.parse(ext.value, NameConstraints);
  return (parsed.permittedSubtrees ?? []).flatMap((t) => (t.base.dNSName !== undefined ? [t.base.dNSName.toLowerCase()] : t.base.iPAddress !== undefined ? [t.base.iPAddress] : []));
}

/** Every host is one the CA may sign for: a permitted name or a name below one, or an address it lists. */
function permits(caPem: string, hosts: readonly string[]): boolean {
  const permitted = permittedOf(caPem);
  return hosts.every((host) =>
    isIP(host) === 0
      ? permitted.some((p) => host === p || host.endsWith(`.${p}`))
      : permitted.includes(`${host}/${isIP(host) === 4 ? 32 : 128}`),
  );
}

async function createCa(input: { label: string; hosts: readonly string[]; now: Date }): Promise<Ca> {
  const keys = await webcrypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
  const cert = await x509.X509CertificateGenerator.createSelfSigned(
    {
      serialNumber: serialNumber(),
      name: [{ CN: [`airlock local CA (${input.label})`] }, { O: ['airlock'] }],
      notBefore: new Date(input.now.getTime() - BACKDATE_MS),
      notAfter: new Date(input.now.getTime() + CA_DAYS * DAY_MS),
      signingAlgorithm: SIGNING_ALGORITHM,
      keys,
      extensions: [
        new x509.BasicConstraintsExtension(true, 0, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.keyCertSign | x509.KeyUsageFlags.cRLSign, true),
        nameConstraints(input.hosts),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, webcrypto),
      ],
    },
    webcrypto,
  );
  const certPem = cert.toString('pem');
  const key = await exportKey(keys.privateKey);
  return { certPem, keyPem: key.export({ type: 'pkcs8', format: 'pem' }).toString(), cert: new NodeCertificate(certPem), key };
}

async function issueServer(input: { ca: Ca; hosts: readonly string[]; now: Date }): Promise<{ certPem: string; keyPem: string; cert: NodeCertificate }> {
  const keys = await webcrypto.subtle.generateKey(KEY_ALGORITHM, true, ['sign', 'verify']);
  const caKey = await webcrypto.subtle.importKey('pkcs8', input.ca.key.export({ type: 'pkcs8', format: 'der' }), KEY_ALGORITHM, false, ['sign']);
  const caCert = new x509.X509Certificate(input.ca.certPem);
  const cert = await x509.X509CertificateGenerator.create(
    {
      serialNumber: serialNumber(),
      subject: [{ CN: [input.hosts[0] ?? 'airlock inbox'] }, { O: ['airlock'] }],
      issuer: caCert.subjectName,
      notBefore: new Date(input.now.getTime() - BACKDATE_MS),
      notAfter: new Date(input.now.getTime() + SERVER_DAYS * DAY_MS),
      signingAlgorithm: SIGNING_ALGORITHM,
      publicKey: keys.publicKey,
      signingKey: caKey,
      extensions: [
        new x509.BasicConstraintsExtension(false, undefined, true),
        new x509.KeyUsagesExtension(x509.KeyUsageFlags.digitalSignature, true),
        new x509.ExtendedKeyUsageExtension([x509.ExtendedKeyUsage.serverAuth]),
        new x509.SubjectAlternativeNameExtension(input.hosts.map((host) => ({ type: isIP(host) === 0 ? 'dns' : 'ip', value: host }))),
        await x509.SubjectKeyIdentifierExtension.create(keys.publicKey, false, webcrypto),
        await x509.AuthorityKeyIdentifierExtension.create(caCert.publicKey, false, webcrypto),
      ],
    },
    webcrypto,
  );
  const certPem = cert.toString('pem');
  const key = await exportKey(keys.privateKey);
  return { certPem, keyPem: key.export({ type: 'pkcs8', format: 'pem' }).toString(), cert: new NodeCertificate(certPem) };
}

async function exportKey(key: webcrypto.CryptoKey): Promise<KeyObject> {
  return createPrivateKey({ key: Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key)), format: 'der', type: 'pkcs8' });
}

/** 16 random bytes, positive and without a leading zero byte, as X.509 wants a serial number. */
function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = 0x40 | ((bytes[0] ?? 0) & 0x3f);
  return bytes.toString('hex');
}

function prepareFolder(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    // Made earlier, or by hand, with a looser mode: it holds private keys.
    chmodSync(dir, 0o700);
  } catch (err) {
    throw new LocalCaError(`cannot create the folder ${dir} for the inbox's TLS files (${errorText(err)}); make the data folder writable by this user, or point AIRLOCK_DATA_DIR at one that is`, { cause: err });
  }
}

function readIfThere(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return undefined;
    throw new LocalCaError(`cannot read ${file} (${errorText(err)}); make it readable by this user, or delete it to have it made again`, { cause: err });
  }
}

/** Written whole or not at all: a copy beside it, then renamed over it. */
function writePrivate(file: string, text: string): void {
  const copy = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(copy, text, { mode: 0o600 });
    renameSync(copy, file);
  } catch (err) {
    throw new LocalCaError(`cannot write ${file} (${errorText(err)}); make the data folder writable by this user, or point AIRLOCK_DATA_DIR at one that is`, { cause: err });
  }
}

function parseCertificate(pem: string, file: string, todo: string): NodeCertificate {
  try {
    return new NodeCertificate(pem);
  } catch {
    throw new LocalCaError(`${file} is not a readable certificate; ${todo}`);
  }
}

function parseKey(pem: string, file: string, todo: string): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch {
    throw new LocalCaError(`${file} is not a readable private key; ${todo}`);
  }
}

/** A file system error's code (`ENOENT`); checked by shape, as errors may come from another realm. */
function errorCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string' ? err.code : undefined;
}

/** `EACCES: permission denied`: the system's words without the path, which the message names already. */
function errorText(err: unknown): string {
  const message = typeof err === 'object' && err !== null && 'message' in err && typeof err.message === 'string' ? err.message : String(err);
  return message.replace(/, (open|mkdir|chmod|rename|read|write)\b.*$/s, '');
}
