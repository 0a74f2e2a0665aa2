import { verify } from 'node:crypto';
import { decisionSigningText, type DecisionPayload } from '../core/approvals';
import type { ReviewerKeys } from '../host/reviewer-keys';

export interface VerifyDecisionInput {
  readonly jobId: string;
  readonly payload: DecisionPayload;
}

export type VerifyDecisionResult = { readonly valid: true } | { readonly valid: false; readonly reason: string };

export function createReviewerActivities(deps: { readonly reviewerKeys: ReviewerKeys }) {
  return {
    /** Checks a signed decision against the named reviewer's key: a signal alone proves nothing. */
    async verifyDecision(input: VerifyDecisionInput): Promise<VerifyDecisionResult> {
      const { payload } = input;
      const key = deps.reviewerKeys.get(payload.reviewer);
      if (key === undefined) return { valid: false, reason: `no key is registered for reviewer ${payload.reviewer}` };
      if (payload.signature === undefined) return { valid: false, reason: 'the decision is not signed' };
      const ok = (() => {
        try {
          return verify(null, Buffer.from(decisionSigningText(input.jobId, payload)), key, Buffer.from(payload.signature, 'base64'));
        } catch {
          return false;
        }
      })();
      return ok ? { valid: true } : { valid: false, reason: `the signature does not verify with ${payload.reviewer}'s key` };
    },
  };
}
