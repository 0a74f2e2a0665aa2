import 'reflect-metadata';
import { X509Certificate } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import * as x509 from '@peculiar/x509';
import { inboxSite, inboxTlsDir } from '../../servers/inbox/site';
import { parseConfig } from '../../core/config/config';
import { ensureLocalTls } from '../../host/tls/local-ca';
import { CA_DAYS, LocalCaError, permittedOf, RENEW_DAYS, SERVER_DAYS } from '../../host/tls/certificates';

const DAY_MS = 86_400_000;
let dir: string;
let base: string;

beforeEach(() => {
  base = mkdtempSync(join(tmpdir(), 'airlock-local-ca-'));
  dir = join(base, 'data', 'inbox', 'tls');
});
afterEach(() => rmSync(base, { recursive: true, force: true }));

const hosts = ['airlock.home.example', '192.168.1.20', 'localhost', '127.0.0.1', 'LOCALHOST', '[::1]', 'not_a_name'];

describe('the local CA and its server certificate', () => {
  test('first use makes a P-256 CA and a server certificate for every name, keys 0600 in a 0700 folder', async () => {
    const tls = await ensureLocalTls({ dir, hosts, label: 'box' });
    expect(tls.issued).toBe('ca');
    expect(tls.caFile).toBe(join(dir, 'ca.crt'));
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    for (const file of ['ca.crt', 'ca.key', 'server.crt', 'server.key']) expect(statSync(join(dir, file)).mode & 0o777).toBe(0o600);

    const ca = new X509Certificate(readFileSync(tls.caFile));
    expect(ca.ca).toBe(true);
    expect(ca.subject).toContain('airlock local CA (box)');
    expect(ca.publicKey.asymmetricKeyDetails).toEqual({ namedCurve: 'prime256v1' });
    expect(tls.caFingerprint).toBe(ca.fingerprint256);
    const days = (c: X509Certificate) => (new Date(c.validTo).getTime() - new Date(c.validFrom).getTime()) / DAY_MS;
    expect(days(ca)).toBeGreaterThanOrEqual(CA_DAYS);
    const caUsage = new x509.X509Certificate(tls.caPem).getExtension(x509.KeyUsagesExtension)?.usages ?? 0;
    expect(caUsage & x509.KeyUsageFlags.keyCertSign).toBeTruthy();

    const server = new X509Certificate(tls.certPem);
    expect(server.ca).toBe(false);
    expect(server.checkIssued(ca) && server.verify(ca.publicKey)).toBe(true);
    expect(server.keyUsage).toEqual(['1.3.6.1.5.5.7.3.1']);
    // Apple and Chrome refuse server certificates valid longer than 397 days.
    expect(days(server)).toBeLessThanOrEqual(397);
    expect(SERVER_DAYS).toBeLessThanOrEqual(397);
    // Each name once, lower case; a name no certificate can carry is left out.
    expect([...tls.hosts].sort()).toEqual(['127.0.0.1', '192.168.1.20', '::1', 'airlock.home.example', 'localhost']);
    expect(server.checkHost('airlock.home.example')).toBe('airlock.home.example');
    expect(server.checkIP('192.168.1.20')).toBe('192.168.1.20');
    expect(readFileSync(join(dir, 'server.key'), 'utf8')).toContain('PRIVATE KEY');
  });

  test('a second start reuses the CA and the certificate; fewer names get a new certificate from the same CA', async () => {
    const first = await ensureLocalTls({ dir, hosts, label: 'box' });
    const again = await ensureLocalTls({ dir, hosts: [...hosts].reverse(), label: 'box' });
    expect(again.issued).toBeUndefined();
    expect(again.caFingerprint).toBe(first.caFingerprint);
    expect(again.certPem).toBe(first.certPem);

    const fewer = await ensureLocalTls({ dir, hosts: ['airlock.home.example', 'localhost'], label: 'box' });
    expect(fewer.issued).toBe('certificate');
    expect(fewer.caFingerprint).toBe(first.caFingerprint);
    expect([...fewer.hosts].sort()).toEqual(['airlock.home.example', 'localhost']);
    expect(new X509Certificate(fewer.certPem).verify(new X509Certificate(first.caPem).publicKey)).toBe(true);
  });

  test('the CA may sign only for its names (Name Constraints, critical); a name outside them makes a new CA', async () => {
    const first = await ensureLocalTls({ dir, hosts, label: 'box' });
    const ext = new x509.X509Certificate(first.caPem).getExtension('2.5.29.30');
    expect(ext?.critical).toBe(true);
    expect(permittedOf(first.caPem).sort()).toEqual(['127.0.0.1/32', '192.168.1.20/32', 'airlock.home.example', 'localhost', expect.stringMatching(/^::1\/128$|^0{0,4}(:0{1,4}){6}:0{0,3}1\/128$/)].sort());
    const moved = await ensureLocalTls({ dir, hosts: ['airlock.new.example', 'localhost'], label: 'box' });
    expect(moved.issued).toBe('ca');
    expect(moved.caFingerprint).not.toBe(first.caFingerprint);
    expect(permittedOf(moved.caPem).sort()).toEqual(['airlock.new.example', 'localhost']);
    // The new CA's key replaced the old one: the old CA can sign nothing more.
    expect(new X509Certificate(moved.certPem).verify(new X509Certificate(first.caPem).publicKey)).toBe(false);
  });

  test('what is served at /ca.crt is the parsed certificate alone; a ca.crt that also holds the key is refused, never served', async () => {
    const served = (await ensureLocalTls({ dir, hosts, label: 'box' })).caPem;
    expect(served).toMatch(/^-----BEGIN CERTIFICATE-----\n[A-Za-z0-9+/=\n]+-----END CERTIFICATE-----\n?$/);
    const caFile = join(dir, 'ca.crt');
    writeFileSync(caFile, `${readFileSync(caFile, 'utf8')}${readFileSync(join(dir, 'ca.key'), 'utf8')}`);
    await expect(ensureLocalTls({ dir, hosts, label: 'box' })).rejects.toThrow(LocalCaError);
  });

  test('starts at the same moment on an empty folder make one CA between them; a lock left by a dead process is taken over once stale', async () => {
    const made = await Promise.all([1, 2, 3].map(() => ensureLocalTls({ dir, hosts, label: 'box' })));
    expect(new Set(made.map((t) => t.caFingerprint)).size).toBe(1);
    expect(made.filter((t) => t.issued === 'ca')).toHaveLength(1);
    const again = await ensureLocalTls({ dir, hosts, label: 'box' });
    expect(again).toMatchObject({ issued: undefined, caFingerprint: made[0]?.caFingerprint });
    expect(existsSync(join(dir, '.lock'))).toBe(false);
    // A lock file an hour old: its holder is gone.
    writeFileSync(join(dir, '.lock'), '');
    const hourAgo = new Date(Date.now() - 3_600_000);
    utimesSync(join(dir, '.lock'), hourAgo, hourAgo);
    expect((await ensureLocalTls({ dir, hosts, label: 'box' })).caFingerprint).toBe(made[0]?.caFingerprint);
  });

  test('within 30 days of its end the certificate is issued again', async () => {
    const first = await ensureLocalTls({ dir, hosts, label: 'box' });
    const early = await ensureLocalTls({ dir, hosts, label: 'box', now: new Date(Date.now() + (SERVER_DAYS - RENEW_DAYS - 2) * DAY_MS) });
    expect(early.issued).toBeUndefined();
    const late = await ensureLocalTls({ dir, hosts, label: 'box', now: new Date(Date.now() + (SERVER_DAYS - RENEW_DAYS + 1) * DAY_MS) });
    expect(late.issued).toBe('certificate');
    expect(late.caFingerprint).toBe(first.caFingerprint);
    expect(late.notAfter.getTime()).toBeGreaterThan(first.notAfter.getTime());
  });

  test('a server key that does not match its certificate (a start stopped between the two) is issued again', async () => {
    const first = await ensureLocalTls({ dir, hosts, label: 'box' });
    writeFileSync(join(dir, 'server.key'), readFileSync(join(dir, 'ca.key')));
    const again = await ensureLocalTls({ dir, hosts, label: 'box' });
    expect(again.issued).toBe('certificate');
    expect(again.caFingerprint).toBe(first.caFingerprint);
  });

  test('a CA key left without its certificate (a first start stopped midway) is made again', async () => {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, 'ca.key'), 'half-made');
    expect((await ensureLocalTls({ dir, hosts, label: 'box' })).issued).toBe('ca');
  });

  describe('problems are one line saying what to do', () => {
    const failure = async (): Promise<LocalCaError> => {
      try {
        await ensureLocalTls({ dir, hosts, label: 'box' });
      } catch (err) {
        if (err instanceof LocalCaError) return err;
        throw err;
      }
      throw new Error('expected a LocalCaError');
    };

    test('a corrupt CA certificate', async () => {
      await ensureLocalTls({ dir, hosts, label: 'box' });
      writeFileSync(join(dir, 'ca.crt'), '-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n');
      const err = await failure();
      expect(err.message).toBe(`${join(dir, 'ca.crt')} is not a readable certificate; delete the folder ${dir} to make a new CA, and trust the new one on your phones`);
    });

    test('a CA certificate without its key', async () => {
      await ensureLocalTls({ dir, hosts, label: 'box' });
      unlinkSync(join(dir, 'ca.key'));
      expect((await failure()).message).toMatch(/ca\.key is missing, so the CA in .*ca\.crt cannot sign; delete the folder .* to make a new CA/);
    });

    test('a corrupt server certificate', async () => {
      await ensureLocalTls({ dir, hosts, label: 'box' });
      writeFileSync(join(dir, 'server.crt'), 'garbage');
      expect((await failure()).message).toMatch(/server\.crt is not a readable certificate; delete .*server\.crt and .*server\.key: the next start issues them again from the same CA$/);
    });

    test('a file that cannot be read', async () => {
      mkdirSync(join(dir, 'ca.crt'), { recursive: true });
      expect((await failure()).message).toMatch(/^cannot read .*ca\.crt \(EISDIR: illegal operation on a directory\); make it readable by this user, or delete it/);
    });

    test('a data folder where nothing can be written', async () => {
      // A file where the folder should be: refused for root as well, unlike a read-only mode.
      mkdirSync(join(base, 'data'), { recursive: true });
      writeFileSync(join(base, 'data', 'inbox'), '');
      const err = await failure();
      expect(err.message).toMatch(/^cannot create the folder .*tls for the inbox's TLS files \(ENOTDIR: not a directory\); make the data folder writable by this user, or point AIRLOCK_DATA_DIR at one that is$/);
      expect(err.message).not.toContain('\n');
    });
  });
});

describe('the inbox site with TLS', () => {
  test('off by default; AIRLOCK_INBOX_TLS takes 1/0, true/false, on/off', () => {
    expect(parseConfig({}).inbox.tls).toBe(false);
    expect(inboxSite(parseConfig({})).tls).toBeUndefined();
    expect(parseConfig({ AIRLOCK_INBOX_TLS: '1' }).inbox.tls).toBe(true);
    expect(parseConfig({ AIRLOCK_INBOX_TLS: 'On' }).inbox.tls).toBe(true);
    expect(parseConfig({ AIRLOCK_INBOX_TLS: 'false' }).inbox.tls).toBe(false);
    expect(() => parseConfig({ AIRLOCK_INBOX_TLS: 'maybe' })).toThrow(/AIRLOCK_INBOX_TLS: expected 1 \(on\) or 0 \(off\)/);
  });

  test('the origin is https, and the certificate names the public host, the listen address and this machine', () => {
    const config = parseConfig({ AIRLOCK_INBOX_TLS: '1', AIRLOCK_APPROVAL_PAGE_URL: 'https://airlock.home.example:7244', AIRLOCK_INBOX_LISTEN: '192.168.1.20:7244', AIRLOCK_DATA_DIR: '/srv/airlock' });
    const site = inboxSite(config);
    expect(site).toMatchObject({ publicUrl: 'https://airlock.home.example:7244', origin: 'https://airlock.home.example:7244', rpId: 'airlock.home.example' });
    expect(site.tls?.dir).toBe(inboxTlsDir(config));
    expect(site.tls?.dir).toBe(join('/srv/airlock', 'inbox', 'tls'));
    expect(site.tls?.hosts).toEqual(['airlock.home.example', '192.168.1.20', 'localhost', '127.0.0.1', hostname()]);
  });

  test('without a public URL it is https://localhost; listening on every address adds no address', () => {
    const site = inboxSite(parseConfig({ AIRLOCK_INBOX_TLS: '1', AIRLOCK_INBOX_LISTEN: '0.0.0.0:7300' }));
    expect(site).toMatchObject({ publicUrl: 'https://localhost:7300', origin: 'https://localhost:7300', rpId: 'localhost' });
    expect(site.tls?.hosts).toEqual(['localhost', 'localhost', '127.0.0.1', hostname()]);
  });

  test('an http:// public URL with TLS is refused, naming the variable', () => {
    expect(() => inboxSite(parseConfig({ AIRLOCK_INBOX_TLS: '1', AIRLOCK_APPROVAL_PAGE_URL: 'http://airlock.home.example:7244/a/' }))).toThrow(
      'invalid configuration: AIRLOCK_APPROVAL_PAGE_URL: is http://airlock.home.example:7244, but the inbox serves HTTPS itself (--tls or AIRLOCK_INBOX_TLS); set it to https://airlock.home.example:7244/a',
    );
  });
});
