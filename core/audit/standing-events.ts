import { z } from 'zod';

/** The audit events of standing approvals: made, not kept, used, not covering a call, revoked. */
export const standingEventSchemas = {
  /** A reviewer's signed approval also stands for later calls of the same operation: until when, how many uses. */
  standing_granted: z.strictObject({
    standingId: z.string(),
    requestId: z.string(),
    toolName: z.string(),
    ruleId: z.string(),
    reviewer: z.string(),
    uses: z.number(),
    until: z.string(),
    target: z.string().optional(),
  }),
  /** An approval asked to stand, but the standing approval could not be kept: the call itself is approved, later ones ask. */
  standing_not_kept: z.strictObject({ requestId: z.string(), toolName: z.string(), reviewer: z.string(), reason: z.string() }),
  /** A gated call ran as approved under a standing approval: no person was asked now; which use of how many. */
  standing_used: z.strictObject({
    standingId: z.string(),
    requestId: z.string(),
    callId: z.string(),
    toolName: z.string(),
    ruleId: z.string(),
    fingerprint: z.string(),
    reviewer: z.string(),
    use: z.number(),
    uses: z.number(),
    until: z.string(),
    target: z.string().optional(),
  }),
  /** A standing approval of this tool and requester did not cover the call, and why (another target, revoked, used up, a signature that no longer verifies). */
  standing_declined: z.strictObject({ standingId: z.string(), requestId: z.string(), toolName: z.string(), why: z.string(), target: z.string().optional() }),
  /** A standing approval was revoked: no call uses it from now on. */
  standing_revoked: z.strictObject({ standingId: z.string(), by: z.string(), reason: z.string() }),
};
