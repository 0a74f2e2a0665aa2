import { z } from 'zod';
import { canonicalJson } from '../util/canonical-json';
import { sha256Hex } from '../util/sha256';

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
  /**
   * An approved call: `execute` runs it only with the approval to check
   * again in the same attempt (what the reviewer saw, against the world
   * now); a holder of the grant cannot skip that step. Absent in grants of
   * ungated calls and of builds before.
   */
  recheck: z.union([z.literal(true), z.string().regex(/^[0-9a-f]{64}$/)]).optional(),
  /**
   * An upstream MCP server's tool: the digest of its definition as the job's
   * snapshot holds it, the one its rules judged. The tools worker sends the
   * call only while the server lists that very definition.
   */
  definition: z.string().regex(/^[0-9a-f]{64}$/).optional(),
});

/**
 * What a grant's `recheck` binds: the approval `execute` checks again (what
 * the reviewer saw and may approve), so a holder of the grant can neither
 * skip the check nor bring a check of their own.
 */
export function approvedCheckDigest(check: unknown): string {
  return sha256Hex(canonicalJson({ purpose: 'airlock-approved-check', check }));
}
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
