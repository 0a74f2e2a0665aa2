import { classifyAddress, formatIp, inCidr, parseCidr, parseIp } from '../../core/util/ip-address';
import { commandsConfigSchema } from '../../core/config/tools/commands';
import { hostsConfigSchema } from '../../core/config/tools/hosts';

function kind(text: string) {
  const bytes = parseIp(text);
  if (bytes === undefined) throw new Error(`${text} does not parse`);
  return classifyAddress(bytes);
}

test.each([
  ['127.0.0.1', 'loopback'],
  ['127.255.255.254', 'loopback'],
  ['::1', 'loopback'],
  ['0.0.0.0', 'unspecified'],
  ['::', 'unspecified'],
  ['10.0.0.1', 'private'],
  ['172.16.0.1', 'private'],
  ['172.31.255.255', 'private'],
  ['192.168.1.1', 'private'],
  ['fd12:3456::1', 'private'],
  ['fc00::1', 'private'],
  ['169.254.1.1', 'link-local'],
  ['fe80::1', 'link-local'],
  ['100.64.0.1', 'cgnat'],
  ['100.127.255.255', 'cgnat'],
  ['224.0.0.1', 'multicast'],
  ['ff02::1', 'multicast'],
  ['169.254.169.254', 'cloud-metadata'],
  ['fd00:ec2::254', 'cloud-metadata'],
  ['255.255.255.255', 'reserved'],
  ['240.0.0.1', 'reserved'],
  // IPv6 forms carrying an IPv4 address
  ['::ffff:127.0.0.1', 'loopback'],
  ['::ffff:7f00:1', 'loopback'],
  ['::ffff:10.1.2.3', 'private'],
  ['::ffff:169.254.169.254', 'cloud-metadata'],
  ['::127.0.0.1', 'loopback'],
  ['64:ff9b::a9fe:a9fe', 'cloud-metadata'],
  ['2002:7f00:1::', 'loopback'],
  ['::8.8.8.8', 'reserved'],
])('%s is %s', (address, expected) => {
  expect(kind(address)).toBe(expected);
});

test.each(['8.8.8.8', '93.184.215.14', '172.32.0.1', '100.128.0.1', '2606:4700::1111', '::ffff:8.8.8.8', '64:ff9b::808:808'])('%s is public', (address) => {
  expect(kind(address)).toBeUndefined();
});

test.each(['1.2.3', '1.2.3.4.5', '01.2.3.4', '256.1.1.1', '1::2::3', '1:2:3:4:5:6:7:8:9', 'fe80::1%eth0', 'g::1', ''])('%s is not an address', (text) => {
  expect(parseIp(text)).toBeUndefined();
});

test('formatting folds the longest zero run', () => {
  expect(formatIp(parseIp('fd00:ec2:0:0:0:0:0:254')!)).toBe('fd00:ec2::254');
  expect(formatIp(parseIp('::ffff:127.0.0.1')!)).toBe('::ffff:7f00:1');
  expect(formatIp(parseIp('1:0:0:2:0:0:0:3')!)).toBe('1:0:0:2::3');
});

test('ranges', () => {
  const lan = parseCidr('192.168.1.0/24')!;
  expect(inCidr(parseIp('192.168.1.77')!, lan)).toBe(true);
  expect(inCidr(parseIp('192.168.2.1')!, lan)).toBe(false);
  expect(inCidr(parseIp('::ffff:192.168.1.77')!, lan)).toBe(false);
  expect(inCidr(parseIp('fd00:1::5')!, parseCidr('fd00::/8')!)).toBe(true);
  expect(parseCidr('10.0.0.0/33')).toBeUndefined();
  expect(parseCidr('10.0.0.0/x')).toBeUndefined();
});

function issue(result: { error?: { issues: ReadonlyArray<{ path: PropertyKey[]; message: string }> } | undefined }) {
  return result.error?.issues[0];
}

test('hosts section: defaults, and clear errors', () => {
  expect(hostsConfigSchema.parse({ allow: ['*'] })).toEqual({ allow: ['*'], allowInternal: [], maxRequestBytes: 1048576, maxResponseBytes: 1048576, timeoutSeconds: 30, maxRedirects: 5 });
  expect(hostsConfigSchema.parse({ allowInternal: ['nas.lan', '*.home.arpa', '192.168.1.0/24', '[::1]', 'fd00::/8'] }).allowInternal).toHaveLength(5);
  expect(issue(hostsConfigSchema.safeParse({}))?.message).toMatch(/list at least one host in allow or allowInternal/);
  expect(issue(hostsConfigSchema.safeParse({ allow: ['http://api.example.com'] }))).toMatchObject({ path: ['allow', 0], message: expect.stringMatching(/expected a host name/) });
  expect(issue(hostsConfigSchema.safeParse({ allowInternal: ['10.0.0.0/40'] }))).toMatchObject({ path: ['allowInternal', 0] });
  expect(issue(hostsConfigSchema.safeParse({ allowInternal: ['*'] }))).toMatchObject({ path: ['allowInternal', 0] });
  expect(hostsConfigSchema.safeParse({ allow: ['*'], allowed: [] }).success).toBe(false);
});

test('commands section: defaults, and clear errors', () => {
  expect(commandsConfigSchema.parse({ du: { path: '/usr/bin/du' } })).toEqual({
    du: { path: '/usr/bin/du', timeoutSeconds: 60, maxTimeoutSeconds: 60, killGraceSeconds: 2, maxOutputBytes: 65536, env: {} },
  });
  expect(issue(commandsConfigSchema.safeParse({ du: { path: 'du' } }))).toMatchObject({ path: ['du', 'path'], message: expect.stringMatching(/absolute path/) });
  expect(issue(commandsConfigSchema.safeParse({ sh: { path: '/usr/../bin/sh' } }))?.message).toMatch(/no "\.\."/);
  expect(issue(commandsConfigSchema.safeParse({ 'rm -rf': { path: '/bin/rm' } }))?.message).toMatch(/expected a command name/);
  expect(issue(commandsConfigSchema.safeParse({ du: { path: '/usr/bin/du', timeoutSeconds: 90, maxTimeoutSeconds: 30 } }))?.message).toMatch(/above maxTimeoutSeconds/);
});
