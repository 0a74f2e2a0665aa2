import { AsnConvert } from '@peculiar/asn1-schema';
import { GeneralName, GeneralSubtree, GeneralSubtrees, NameConstraints, id_ce_nameConstraints } from '@peculiar/asn1-x509';
import * as x509 from '@peculiar/x509';
import { type KeyObject, X509Certificate as NodeCertificate, createPrivateKey, randomBytes, webcrypto } from 'node:crypto';
import { chmodSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { isIP } from 'node:net';
import 'reflect-metadata';
import { AirlockError } from '../../core/util/errors';

/** The certificates of the local CA: load, check, create and issue them, and the private files they live in. */

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

export const DAY_MS = 86_400_000;
// Phones whose clock runs a little behind still accept a certificate made just now.
export const BACKDATE_MS = 3_600_000;
export const KEY_ALGORITHM = { name: 'ECDSA', namedCurve: 'P-256' };
export const SIGNING_ALGORITHM = { name: 'ECDSA', hash: 'SHA-256' };

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

export function commonName(certPem: string): string {
  return new x509.X509Certificate(certPem).subjectName.getField('CN')[0] ?? 'airlock local CA';
}

/** The DNS names and IP addresses in a certificate's SubjectAltName. */
export function sanOf(certPem: string): string[] {
  const names = new x509.X509Certificate(certPem).getExtension(x509.SubjectAlternativeNameExtension)?.names.toJSON() ?? [];
  return names.filter((n) => n.type === 'dns' || n.type === 'ip').map((n) => n.value.toLowerCase());
}

export interface Ca {
  readonly certPem: string;
  readonly keyPem: string;
  readonly cert: NodeCertificate;
  readonly key: KeyObject;
}

export function loadCa(input: { dir: string; certFile: string; keyFile: string; now: Date }): Ca | undefined {
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

export function loadServer(input: { dir: string; certFile: string; keyFile: string }): { certPem: string; keyPem: string; cert: NodeCertificate; key: KeyObject } | undefined {
  const certPem = readIfThere(input.certFile);
  const keyPem = readIfThere(input.keyFile);
  if (certPem === undefined || keyPem === undefined) return undefined;
  const reissue = `delete ${input.certFile} and ${input.keyFile}: the next start issues them again from the same CA`;
  return { certPem, keyPem, cert: parseCertificate(certPem, input.certFile, reissue), key: parseKey(keyPem, input.keyFile, reissue) };
}

/** Still good: its key, signed by this CA, for exactly these names, and not near its end. */
export function serverFits(input: { server: { cert: NodeCertificate; key: KeyObject; certPem: string }; ca: NodeCertificate; hosts: readonly string[]; now: Date }): boolean {
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
export function nameConstraints(hosts: readonly string[]): x509.Extension {
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
export function permits(caPem: string, hosts: readonly string[]): boolean {
  const permitted = permittedOf(caPem);
  return hosts.every((host) =>
    isIP(host) === 0
      ? permitted.some((p) => host === p || host.endsWith(`.${p}`))
      : permitted.includes(`${host}/${isIP(host) === 4 ? 32 : 128}`),
  );
}

export async function createCa(input: { label: string; hosts: readonly string[]; now: Date }): Promise<Ca> {
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

export async function issueServer(input: { ca: Ca; hosts: readonly string[]; now: Date }): Promise<{ certPem: string; keyPem: string; cert: NodeCertificate }> {
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

export async function exportKey(key: webcrypto.CryptoKey): Promise<KeyObject> {
  return createPrivateKey({ key: Buffer.from(await webcrypto.subtle.exportKey('pkcs8', key)), format: 'der', type: 'pkcs8' });
}

/** 16 random bytes, positive and without a leading zero byte, as X.509 wants a serial number. */
export function serialNumber(): string {
  const bytes = randomBytes(16);
  bytes[0] = 0x40 | ((bytes[0] ?? 0) & 0x3f);
  return bytes.toString('hex');
}

export function prepareFolder(dir: string): void {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    // Made earlier, or by hand, with a looser mode: it holds private keys.
    chmodSync(dir, 0o700);
  } catch (err) {
    throw new LocalCaError(`cannot create the folder ${dir} for the inbox's TLS files (${errorText(err)}); make the data folder writable by this user, or point AIRLOCK_DATA_DIR at one that is`, { cause: err });
  }
}

export function readIfThere(file: string): string | undefined {
  try {
    return readFileSync(file, 'utf8');
  } catch (err) {
    if (errorCode(err) === 'ENOENT') return undefined;
    throw new LocalCaError(`cannot read ${file} (${errorText(err)}); make it readable by this user, or delete it to have it made again`, { cause: err });
  }
}

/** Written whole or not at all: a copy beside it, then renamed over it. */
export function writePrivate(file: string, text: string): void {
  const copy = `${file}.${process.pid}.tmp`;
  try {
    writeFileSync(copy, text, { mode: 0o600 });
    renameSync(copy, file);
  } catch (err) {
    throw new LocalCaError(`cannot write ${file} (${errorText(err)}); make the data folder writable by this user, or point AIRLOCK_DATA_DIR at one that is`, { cause: err });
  }
}

export function parseCertificate(pem: string, file: string, todo: string): NodeCertificate {
  try {
    return new NodeCertificate(pem);
  } catch {
    throw new LocalCaError(`${file} is not a readable certificate; ${todo}`);
  }
}

export function parseKey(pem: string, file: string, todo: string): KeyObject {
  try {
    return createPrivateKey(pem);
  } catch {
    throw new LocalCaError(`${file} is not a readable private key; ${todo}`);
  }
}

/** A file system error's code (`ENOENT`); checked by shape, as errors may come from another realm. */
export function errorCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof err.code === 'string' ? err.code : undefined;
}

/** `EACCES: permission denied`: the system's words without the path, which the message names already. */
export function errorText(err: unknown): string {
  const message = typeof err === 'object' && err !== null && 'message' in err && typeof err.message === 'string' ? err.message : String(err);
  return message.replace(/, (open|mkdir|chmod|rename|read|write)\b.*$/s, '');
}
