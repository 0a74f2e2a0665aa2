import { classifyAddress, formatIp, inCidr, parseIp, type Cidr } from '../../core/util/ip-address';
import { cidrOf, type HostsConfig } from '../../core/config/tools/hosts';

/**
 * Where `http_request` may connect, from the tools config's `hosts`:
 * - a host name must match `allow` ("*" matches any) or `allowInternal`
 *   by name, or it is refused before it is even resolved (a lookup of an
 *   unlisted name would already send it out);
 * - an address literal must be in a range of `allow` (or "*") or of
 *   `allowInternal`;
 * - every address a name resolves to must be public, unless the name or
 *   the address is listed in `allowInternal`; a cloud-metadata address
 *   only when listed there by itself.
 */
export type AddressVerdict = { readonly ok: true; readonly address: string } | { readonly ok: false; readonly address: string; readonly reason: string };

interface Lists {
  readonly names: readonly string[];
  readonly ranges: readonly Cidr[];
}

function split(entries: readonly string[]): Lists {
  const names: string[] = [];
  const ranges: Cidr[] = [];
  for (const entry of entries) {
    const cidr = entry === '*' ? undefined : cidrOf(entry);
    if (cidr !== undefined) ranges.push(cidr);
    else names.push(entry.toLowerCase().replace(/\.$/, ''));
  }
  return { names, ranges };
}

function nameMatches(names: readonly string[], hostname: string): boolean {
  const h = hostname.toLowerCase().replace(/\.$/, '');
  return names.some((p) => p === '*' || (p.startsWith('*.') ? h.endsWith(p.slice(1)) : h === p));
}

export class AddressPolicy {
  private readonly allow: Lists;
  private readonly internal: Lists;

  constructor(hosts: Pick<HostsConfig, 'allow' | 'allowInternal'>) {
    this.allow = split(hosts.allow);
    this.internal = split(hosts.allowInternal);
  }

  /** Whether a host name may be resolved at all; a reason when not. */
  checkName(hostname: string): string | undefined {
    if (nameMatches(this.allow.names, hostname) || nameMatches(this.internal.names, hostname)) return undefined;
    return `${hostname} is not in hosts.allow of the tools config`;
  }

  /**
   * `hostname` as the URL names it (brackets removed), `address` as
   * resolved (or the same, for an address literal).
   */
  check(hostname: string, address: string, literal: boolean): AddressVerdict {
    const bytes = parseIp(address);
    if (bytes === undefined) return { ok: false, address, reason: `${address} is not an IP address` };
    const shown = formatIp(bytes);
    const kind = classifyAddress(bytes);
    const inInternalRange = this.internal.ranges.some((r) => inCidr(bytes, r));
    if (kind === undefined) {
      const listed = literal
        ? this.allow.names.includes('*') || this.allow.ranges.some((r) => inCidr(bytes, r)) || inInternalRange
        : this.checkName(hostname) === undefined;
      return listed ? { ok: true, address: shown } : { ok: false, address: shown, reason: `${shown} is not in hosts.allow of the tools config` };
    }
    if (kind === 'cloud-metadata') {
      const exact = this.internal.ranges.some((r) => r.prefix === r.bytes.length * 8 && inCidr(bytes, r));
      return exact
        ? { ok: true, address: shown }
        : { ok: false, address: shown, reason: `${shown} is a cloud metadata address; it is reached only when listed by itself in hosts.allowInternal` };
    }
    if (inInternalRange || (!literal && nameMatches(this.internal.names.filter((n) => n !== '*'), hostname))) return { ok: true, address: shown };
    const via = literal ? '' : ` (${hostname} resolves to it)`;
    return { ok: false, address: shown, reason: `${shown} is a ${kind} address${via}; add the host or its range to hosts.allowInternal to allow it` };
  }
}
