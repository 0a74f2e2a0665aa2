import { z } from 'zod';

/**
 * `hosts:` in the tools config: where `http_request` may connect at all.
 * (Which of these a call may reach without approval is policy's business:
 * the rules file's `detectors.allowedHosts`.)
 */

export const hostPatternSchema = z
  .string()
  .regex(/^(\*\.)?[A-Za-z0-9]([A-Za-z0-9.-]*[A-Za-z0-9])?$/, 'expected a host name such as "api.example.com" or "*.example.com"');

export const hostsConfigSchema = z.strictObject({
  /** Host names requests may go to; `*.example.com` covers its subdomains. */
  allow: z.array(hostPatternSchema).min(1, 'list at least one host, or leave hosts out to offer no http_request'),
});
export type HostsConfig = z.output<typeof hostsConfigSchema>;
