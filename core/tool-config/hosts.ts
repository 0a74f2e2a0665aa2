import { z } from 'zod';
import { parseCidr } from '../net/ip-address';

/**
 * The `hosts` section of the tools config: what `http_request` may reach
 * beyond the public internet, and its limits. Loopback, private,
 * link-local, CGNAT, multicast, reserved and cloud-metadata addresses are
 * refused unless listed here.
 */

const hostName = /^(\*\.)?[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)*$/;

const internalEntry = z
  .string()
  .trim()
  .refine(
    (v) => parseCidr(v.startsWith('[') && v.endsWith(']') ? v.slice(1, -1) : v) !== undefined || (hostName.test(v) && !/^[0-9.]+$/.test(v)),
    'expected a host name ("nas.lan", "*.home.arpa"), an address ("192.168.1.20", "::1") or a range ("192.168.1.0/24", "fd00::/8")',
  );

export const hostsConfigSchema = z
  .strictObject({
    /**
     * Host names, addresses and ranges that may be reached although they
     * are internal. A host name allows whatever it resolves to; a
     * cloud-metadata address is reached only when listed by itself.
     */
    allowInternal: z.array(internalEntry).max(1000).default([]),
    /** Request bodies larger than this are refused before connecting. */
    maxRequestBytes: z.number().int().min(0).max(64 * 1024 * 1024).default(1024 * 1024),
    /** The response body is read up to this and cut there. */
    maxResponseBytes: z.number().int().min(1).max(64 * 1024 * 1024).default(1024 * 1024),
    /** For the whole call: resolving, connecting, every redirect and the body. */
    timeoutSeconds: z.number().positive().max(600).default(30),
    maxRedirects: z.number().int().min(0).max(20).default(5),
  })
  .default({ allowInternal: [], maxRequestBytes: 1024 * 1024, maxResponseBytes: 1024 * 1024, timeoutSeconds: 30, maxRedirects: 5 });

export type HostsConfig = z.output<typeof hostsConfigSchema>;
