import { createHash, verify } from 'node:crypto';
import { verifyAuthenticationResponse } from '@simplewebauthn/server';
import { type DecisionPayload, type PasskeyAssertion } from '../core/approval/approvals';
import { decisionSigningText } from '../core/approval/decision-check';
import { decisionChallenge } from '../core/approval/decision-challenge';
import { describeError } from '../core/temporal/describe-error';
import { ReviewerKeysError, type ReviewerKeys } from '../host/keys/reviewer-keys';
import type { PasskeyCounters } from '../host/stores/passkey-counters/store';

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
 * verification, over the challenge derived from this very decision. An
 * authenticator that counts its signatures must present a counter above
 * the last one accepted (the same assertion again, from a retry, passes):
 * a lower or equal one comes from a copy of the credential.
 */
async function verifyPasskey(
  keys: ReviewerKeys,
  counters: PasskeyCounters | undefined,
  jobId: string,
  payload: DecisionPayload,
  assertion: PasskeyAssertion,
): Promise<VerifyDecisionResult> {
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
  const seal = createHash('sha256').update(assertion.signature).digest('hex');
  const last = await counters?.last(passkey.id);
  // The very assertion accepted before (a retried activity) is held to the count before it.
  const floor = last === undefined ? 0 : last.assertion === seal ? last.counter - 1 : last.counter;
  let counted: number;
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
      credential: { id: passkey.id, publicKey: Buffer.from(passkey.publicKey, 'base64url'), counter: floor },
    });
    if (!result.verified) return invalid(`the passkey assertion does not verify with ${payload.reviewer}'s passkey`);
    counted = result.authenticationInfo.newCounter;
  } catch (err) {
    if (/counter/i.test(describeError(err))) return invalid(clonedText(payload.reviewer, floor));
    return invalid(`the passkey assertion does not verify with ${payload.reviewer}'s passkey: ${describeError(err)}`);
  }
  // Authenticators that do not count send 0: nothing to track.
  if (counted === 0 || counters === undefined) return { valid: true };
  return (await counters.advance(passkey.id, counted, seal)) ? { valid: true } : invalid(clonedText(payload.reviewer, floor));
}

function clonedText(reviewer: string, last: number): string {
  return `${reviewer}'s passkey presented a signature counter that is not above the last one accepted (${last}): a copy of the credential may be in use; the decision is refused (remove and register the passkey again if this is unexpected)`;
}

/**
 * A signed decision (Ed25519 signature or passkey assertion) against the
 * named reviewer's keys as they are now. Without `counters` a passkey's
 * signature counter is not compared: a standing approval's signature is
 * checked again at every use, long after its counter moved on.
 */
export async function verifySignedDecision(
  keys: ReviewerKeys,
  counters: PasskeyCounters | undefined,
  input: VerifyDecisionInput,
): Promise<VerifyDecisionResult> {
  const { payload } = input;
  try {
    if (payload.passkey !== undefined) return await verifyPasskey(keys, counters, input.jobId, payload, payload.passkey);
    if (payload.signature === undefined) return invalid('the decision is not signed');
    return verifyEd25519(keys, input.jobId, payload, payload.signature);
  } catch (err) {
    // Retrying cannot fix a broken keys file: refused at once (fail closed), with what to fix.
    if (err instanceof ReviewerKeysError) return invalid(`the decision could not be verified: ${err.message}; fix the file, then decide again`);
    throw err;
  }
}

export function createReviewerActivities(deps: { readonly reviewerKeys: ReviewerKeys; readonly passkeyCounters?: PasskeyCounters }) {
  return {
    /** Checks a signed decision (Ed25519 signature or passkey assertion) against the named reviewer's keys: a signal alone proves nothing. */
    async verifyDecision(input: VerifyDecisionInput): Promise<VerifyDecisionResult> {
      return verifySignedDecision(deps.reviewerKeys, deps.passkeyCounters, input);
    },
  };
}
