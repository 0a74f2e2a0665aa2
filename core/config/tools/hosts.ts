import { z } from 'zod';
import { parseCidr } from '../../util/ip-address';

/**
 * `hosts:` in the tools config: where `http_request` may connect at all,
 * and its limits. (Which of these a call may reach without approval is
 * policy's business: the rules file's `detectors.allowedHosts`.)
 *
 * `allow` lists public hosts ("*" for any); a name there must resolve to
 * public addresses only. Loopback, private, link-local, CGNAT, multicast,
 * reserved and cloud-metadata addresses are reached only through
 * `allowInternal`, by host name or by address range; a cloud-metadata
 * address only when listed by itself.
 */

const label = '[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?';
const hostName = new RegExp(`^(\\*\\.)?${label}(\\.${label})*\\.?$`);

/** An address or range, `[::1]` written with or without brackets. */
export function cidrOf(entry: string): ReturnType<typeof parseCidr> {
  return parseCidr(entry.startsWith('[') && entry.endsWith(']') ? entry.slice(1, -1) : entry);
}

function isHostName(entry: string): boolean {
  // All digits and dots is an address (or a typo of one), never a name.
  return hostName.test(entry) && !/^[0-9.]+$/.test(entry);
}

export const hostPatternSchema = z
  .string()
  .trim()
  .refine(
    (v) => v === '*' || isHostName(v) || cidrOf(v) !== undefined,
    'expected a host name ("api.example.com", "*.example.com"), an address ("203.0.113.7"), a range ("203.0.113.0/24") or "*" for any public host',
  );

const internalEntrySchema = z
  .string()
  .trim()
  .refine(
    (v) => isHostName(v) || cidrOf(v) !== undefined,
    'expected a host name ("nas.lan", "*.home.arpa"), an address ("192.168.1.20", "::1") or a range ("192.168.1.0/24", "fd00::/8")',
  );

export const hostsConfigSchema = z
  .strictObject({
    /** Public hosts requests may go to: names (`*.example.com` covers subdomains), addresses, ranges, or "*" for any. */
    allow: z.array(hostPatternSchema).max(1000).default([]),
    /**
     * Internal hosts requests may go to, by name (whatever it resolves to)
     * or by address range.
     */
    allowInternal: z.array(internalEntrySchema).max(1000).default([]),
    /** Request bodies larger than this are refused before connecting. */
    maxRequestBytes: z.number().int().min(0).max(64 * 1024 * 1024).default(1024 * 1024),
    /** The response body is read up to this and cut there. */
    maxResponseBytes: z.number().int().min(1).max(64 * 1024 * 1024).default(1024 * 1024),
    /** For the whole call: resolving, connecting, every redirect and the body. */
    timeoutSeconds: z.number().positive().max(600).default(30),
    maxRedirects: z.number().int().min(0).max(20).default(5),
  })
  .refine((h) => h.allow.length + h.allowInternal.length > 0, {
    path: ['allow'],
    message: 'list at least one host in allow or allowInternal, or leave hosts out to offer no http_request',
  });
export type HostsConfig = z.output<typeof hostsConfigSchema>;

/** The section with nothing listed but its defaults, for tests and tools that build one in code. */
export function hostsConfig(input: z.input<typeof hostsConfigSchema>): HostsConfig {
  return hostsConfigSchema.parse(input);
}
