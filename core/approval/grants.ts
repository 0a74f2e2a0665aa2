import { z } from 'zod';
import { canonicalJson } from '../util/canonical-json';

/**
 * A grant: the agent side's signed statement that one exact call may run
 * once. The tools side verifies it, recomputes the fingerprint from the
 * arguments it is asked to run, and consumes the nonce before acting.
 */
export const grantClaimsSchema = z.strictObject({
  v: z.literal(1),
  jobId: z.string().min(1),
  callId: z.string().min(1),
  fingerprint: z.string().regex(/^[0-9a-f]{64}$/),
  nonce: z.string().regex(/^[0-9a-f]{32}$/),
  /** Epoch milliseconds. */
  expiresAt: z.number().int(),
});
export type GrantClaims = z.infer<typeof grantClaimsSchema>;

export const grantSchema = z.strictObject({
  claims: grantClaimsSchema,
  /** Ed25519 over `grantSigningText(claims)`, base64. */
  signature: z.string().min(1),
});
export type Grant = z.infer<typeof grantSchema>;

export function grantSigningText(claims: GrantClaims): string {
  return canonicalJson({ purpose: 'airlock-grant', ...claims });
}
