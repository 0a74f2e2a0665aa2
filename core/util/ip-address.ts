/**
 * IP addresses as bytes, CIDR ranges and the address classes an outbound
 * request must not reach by accident. Pure: the config schema (core) and
 * the request engine (host) share one reading of an address.
 */

/** 4 bytes for IPv4, 16 for IPv6. */
export type IpBytes = readonly number[];

export interface Cidr {
  readonly bytes: IpBytes;
  readonly prefix: number;
}

function parseIpv4(text: string): IpBytes | undefined {
  const parts = text.split('.');
  if (parts.length !== 4) return undefined;
  const bytes: number[] = [];
  for (const part of parts) {
    // Decimal only, no leading zeros: "010" is octal to some parsers and decimal to others.
    if (!/^(0|[1-9][0-9]{0,2})$/.test(part)) return undefined;
    const n = Number(part);
    if (n > 255) return undefined;
    bytes.push(n);
  }
  return bytes;
}

function parseIpv6(text: string): IpBytes | undefined {
  if (text.includes('%')) return undefined; // zone ids name an interface, not an address
  const halves = text.split('::');
  if (halves.length > 2) return undefined;
  const groupsOf = (half: string): number[] | undefined => {
    if (half === '') return [];
    const words = half.split(':');
    const out: number[] = [];
    for (const [i, word] of words.entries()) {
      if (i === words.length - 1 && word.includes('.')) {
        const v4 = parseIpv4(word);
        if (v4 === undefined) return undefined;
        out.push((v4[0]! << 8) | v4[1]!, (v4[2]! << 8) | v4[3]!);
      } else {
        if (!/^[0-9a-fA-F]{1,4}$/.test(word)) return undefined;
        out.push(Number.parseInt(word, 16));
      }
    }
    return out;
  };
  const head = groupsOf(halves[0] ?? '');
  const tail = halves.length === 2 ? groupsOf(halves[1] ?? '') : [];
  if (head === undefined || tail === undefined) return undefined;
  const missing = 8 - head.length - tail.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined;
  const groups = [...head, ...new Array<number>(missing).fill(0), ...tail];
  return groups.flatMap((g) => [g >> 8, g & 0xff]);
}

/** An IPv4 or IPv6 address in its usual text forms (IPv6 without brackets); undefined when it is not one. */
export function parseIp(text: string): IpBytes | undefined {
  return text.includes(':') ? parseIpv6(text) : parseIpv4(text);
}

/** `[::1]` as URLs write it, or a plain address. */
export function parseHostIp(host: string): IpBytes | undefined {
  return host.startsWith('[') && host.endsWith(']') ? parseIpv6(host.slice(1, -1)) : parseIp(host);
}

export function formatIp(bytes: IpBytes): string {
  if (bytes.length === 4) return bytes.join('.');
  const groups: number[] = [];
  for (let i = 0; i < 16; i += 2) groups.push((bytes[i]! << 8) | bytes[i + 1]!);
  // The longest run of two or more zero groups becomes "::".
  let best = { at: -1, len: 0 };
  for (let i = 0; i < 8; ) {
    if (groups[i] !== 0) {
      i++;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > best.len && j - i >= 2) best = { at: i, len: j - i };
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (best.at < 0) return hex.join(':');
  return `${hex.slice(0, best.at).join(':')}::${hex.slice(best.at + best.len).join(':')}`;
}

/** `10.0.0.0/8`, `fd00::/8`, or a single address (a full-length prefix). */
export function parseCidr(text: string): Cidr | undefined {
  const slash = text.indexOf('/');
  const bytes = parseIp(slash < 0 ? text : text.slice(0, slash));
  if (bytes === undefined) return undefined;
  const bits = bytes.length * 8;
  if (slash < 0) return { bytes, prefix: bits };
  const prefixText = text.slice(slash + 1);
  if (!/^[0-9]{1,3}$/.test(prefixText)) return undefined;
  const prefix = Number(prefixText);
  return prefix <= bits ? { bytes, prefix } : undefined;
}

export function inCidr(address: IpBytes, range: Cidr): boolean {
  if (address.length !== range.bytes.length) return false;
  let left = range.prefix;
  for (let i = 0; i < address.length && left > 0; i++, left -= 8) {
    const mask = left >= 8 ? 0xff : (0xff << (8 - left)) & 0xff;
    if ((address[i]! & mask) !== (range.bytes[i]! & mask)) return false;
  }
  return true;
}

/** Why an address is not an ordinary public one. */
export type AddressClass =
  | 'unspecified'
  | 'loopback'
  | 'private'
  | 'link-local'
  | 'cgnat'
  | 'multicast'
  | 'cloud-metadata'
  | 'reserved';

const range = (text: string): Cidr => {
  const cidr = parseCidr(text);
  if (cidr === undefined) throw new Error(`bad built-in range ${text}`);
  return cidr;
};

/** Checked in order: the first match names the class (metadata before link-local). */
const special: ReadonlyArray<readonly [Cidr, AddressClass]> = [
  [range('169.254.169.254/32'), 'cloud-metadata'],
  [range('fd00:ec2::254/128'), 'cloud-metadata'],
  [range('0.0.0.0/8'), 'unspecified'],
  [range('127.0.0.0/8'), 'loopback'],
  [range('10.0.0.0/8'), 'private'],
  [range('172.16.0.0/12'), 'private'],
  [range('192.168.0.0/16'), 'private'],
  [range('100.64.0.0/10'), 'cgnat'],
  [range('169.254.0.0/16'), 'link-local'],
  [range('192.0.0.0/24'), 'reserved'],
  [range('198.18.0.0/15'), 'reserved'],
  [range('224.0.0.0/4'), 'multicast'],
  [range('240.0.0.0/4'), 'reserved'],
  [range('::/128'), 'unspecified'],
  [range('::1/128'), 'loopback'],
  [range('64:ff9b:1::/48'), 'private'],
  [range('100::/64'), 'reserved'],
  [range('fc00::/7'), 'private'],
  [range('fe80::/10'), 'link-local'],
  [range('fec0::/10'), 'private'],
  [range('ff00::/8'), 'multicast'],
];

const LOWEST_IPV6 = range('::/127');
const NAT64 = range('64:ff9b::/96');

/**
 * IPv6 forms that carry an IPv4 address the packet may end up at: mapped
 * (`::ffff:a.b.c.d`), compatible (`::a.b.c.d`), NAT64 (`64:ff9b::/96`) and
 * 6to4 (`2002:AABB:CCDD::/48`).
 */
export function embeddedIpv4(address: IpBytes): IpBytes | undefined {
  if (address.length !== 16) return undefined;
  const zeros = (from: number, to: number) => address.slice(from, to).every((b) => b === 0);
  if (zeros(0, 10) && address[10] === 0xff && address[11] === 0xff) return address.slice(12);
  if (zeros(0, 12) && !zeros(12, 16)) return address.slice(12);
  if (inCidr(address, NAT64)) return address.slice(12);
  if (address[0] === 0x20 && address[1] === 0x02) return address.slice(2, 6);
  return undefined;
}

/** The class of an address no request may reach unless allowed, or undefined for an ordinary public one. */
export function classifyAddress(address: IpBytes): AddressClass | undefined {
  if (inCidr(address, LOWEST_IPV6)) return address[15] === 0 ? 'unspecified' : 'loopback';
  const inner = embeddedIpv4(address);
  // An IPv4-compatible address (`::a.b.c.d`) is deprecated and never public.
  if (inner !== undefined) return classifyAddress(inner) ?? (address.slice(0, 12).every((b) => b === 0) ? 'reserved' : undefined);
  for (const [cidr, kind] of special) if (inCidr(address, cidr)) return kind;
  if (address.length === 4 && address.every((b) => b === 255)) return 'reserved';
  return undefined;
}
