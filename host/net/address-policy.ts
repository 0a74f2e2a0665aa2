import { classifyAddress, formatIp, inCidr, parseCidr, parseIp, type Cidr } from '../../core/net/ip-address';

/**
 * Which addresses `http_request` may connect to: every public address, and
 * internal ones (loopback, private, link-local, CGNAT, multicast, reserved,
 * cloud metadata) only when the config lists their host name or a range
 * holding them. A cloud-metadata address must be listed by itself.
 */
export type AddressVerdict = { readonly ok: true; readonly address: string } | { readonly ok: false; readonly address: string; readonly reason: string };

export class AddressPolicy {
  private readonly names: readonly string[];
  private readonly ranges: readonly Cidr[];

  constructor(allowInternal: readonly string[]) {
    const names: string[] = [];
    const ranges: Cidr[] = [];
    for (const entry of allowInternal) {
      const bare = entry.startsWith('[') && entry.endsWith(']') ? entry.slice(1, -1) : entry;
      const cidr = parseCidr(bare);
      if (cidr !== undefined) ranges.push(cidr);
      else names.push(entry.toLowerCase());
    }
    this.names = names;
    this.ranges = ranges;
  }

  private nameListed(hostname: string): boolean {
    const h = hostname.toLowerCase().replace(/\.$/, '');
    return this.names.some((p) => (p.startsWith('*.') ? h.endsWith(p.slice(1)) : h === p));
  }

  /** `hostname` as the URL names it (brackets removed), `address` as resolved. */
  check(hostname: string, address: string): AddressVerdict {
    const bytes = parseIp(address);
    if (bytes === undefined) return { ok: false, address, reason: `${address} is not an IP address` };
    const shown = formatIp(bytes);
    const kind = classifyAddress(bytes);
    if (kind === undefined) return { ok: true, address: shown };
    if (kind === 'cloud-metadata') {
      const exact = this.ranges.some((r) => r.prefix === r.bytes.length * 8 && inCidr(bytes, r));
      return exact
        ? { ok: true, address: shown }
        : { ok: false, address: shown, reason: `${shown} is a cloud metadata address; it is reached only when listed by itself in hosts.allowInternal` };
    }
    if (this.nameListed(hostname) || this.ranges.some((r) => inCidr(bytes, r))) return { ok: true, address: shown };
    const via = hostname === shown ? '' : ` (${hostname} resolves to it)`;
    return { ok: false, address: shown, reason: `${shown} is a ${kind} address${via}; add the host or its range to hosts.allowInternal to allow it` };
  }
}
