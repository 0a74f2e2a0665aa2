import { verify } from 'node:crypto';
import { verifyAuthenticationResponse } from '@simplewebauthn/server';
import { decisionSigningText, type DecisionPayload, type PasskeyAssertion } from '../core/approval/approvals';
import { decisionChallenge } from '../core/approval/decision-challenge';
import { describeError } from '../core/temporal/describe-error';
import { ReviewerKeysError, type ReviewerKeys } from '../host/reviewer-keys';

export interface VerifyDecisionInput {
  readonly jobId: string;
  readonly payload: DecisionPayload;
}

export type VerifyDecisionResult = { readonly valid: true } | { readonly valid: false; readonly reason: string };

const invalid = (reason: string): VerifyDecisionResult => ({ valid: false, reason });

function verifyEd25519(keys: ReviewerKeys, jobId: string, payload: DecisionPayload, signature: string): VerifyDecisionResult {
  const key = keys.get(payload.reviewer);
  if (key === undefined) return invalid(`no key is registered for reviewer ${payload.reviewer}`);
  try {
    if (verify(null, Buffer.from(decisionSigningText(jobId, payload)), key, Buffer.from(signature, 'base64'))) return { valid: true };
  } catch {
    // Malformed signature bytes: the same answer as a wrong one.
  }
  return invalid(`the signature does not verify with ${payload.reviewer}'s key`);
}

/**
 * A passkey assertion counts when one of the reviewer's registered
 * passkeys made it, on the page origin it was registered on, with user
 * verification, over the challenge derived from this very decision. The
 * signature counter is not tracked: the challenge includes the request's
 * single-use nonce, so an assertion cannot decide anything twice.
 */
async function verifyPasskey(keys: ReviewerKeys, jobId: string, payload: DecisionPayload, assertion: PasskeyAssertion): Promise<VerifyDecisionResult> {
  const registered = keys.passkeys?.(payload.reviewer) ?? [];
  const passkey = registered.find((p) => p.id === assertion.credentialId);
  if (passkey === undefined) {
    return invalid(
      registered.length === 0
        ? `no passkey is registered for reviewer ${payload.reviewer}`
        : `passkey ${assertion.credentialId.slice(0, 16)}… is not one of ${payload.reviewer}'s registered passkeys`,
    );
  }
  const { passkey: _assertion, signature: _signature, ...decision } = payload;
  try {
    const result = await verifyAuthenticationResponse({
      response: {
        id: assertion.credentialId,
        rawId: assertion.credentialId,
        type: 'public-key',
        clientExtensionResults: {},
        response: {
          authenticatorData: assertion.authenticatorData,
          clientDataJSON: assertion.clientDataJSON,
          signature: assertion.signature,
          ...(assertion.userHandle !== undefined ? { userHandle: assertion.userHandle } : {}),
        },
      },
      expectedChallenge: decisionChallenge(jobId, decision),
      expectedOrigin: passkey.origin,
      expectedRPID: passkey.rpId,
      expectedType: 'webauthn.get',
      requireUserVerification: true,
      credential: { id: passkey.id, publicKey: Buffer.from(passkey.publicKey, 'base64url'), counter: 0 },
    });
    return result.verified ? { valid: true } : invalid(`the passkey assertion does not verify with ${payload.reviewer}'s passkey`);
  } catch (err) {
    return invalid(`the passkey assertion does not verify with ${payload.reviewer}'s passkey: ${describeError(err)}`);
  }
}

export function createReviewerActivities(deps: { readonly reviewerKeys: ReviewerKeys }) {
  return {
    /** Checks a signed decision (Ed25519 signature or passkey assertion) against the named reviewer's keys: a signal alone proves nothing. */
    async verifyDecision(input: VerifyDecisionInput): Promise<VerifyDecisionResult> {
      const { payload } = input;
      try {
        if (payload.passkey !== undefined) return await verifyPasskey(deps.reviewerKeys, input.jobId, payload, payload.passkey);
        if (payload.signature === undefined) return invalid('the decision is not signed');
        return verifyEd25519(deps.reviewerKeys, input.jobId, payload, payload.signature);
      } catch (err) {
        // Retrying cannot fix a broken keys file: refused at once (fail closed), with what to fix.
        if (err instanceof ReviewerKeysError) return invalid(`the decision could not be verified: ${err.message}; fix the file, then decide again`);
        throw err;
      }
    },
  };
}
