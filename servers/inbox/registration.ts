import { createHash } from 'node:crypto';
import { generateRegistrationOptions, verifyRegistrationResponse } from '@simplewebauthn/server';
import { z } from 'zod';
import { describeError } from '../../core/temporal/describe-error';
import { InviteError, MemoryChallenges, type ChallengeStore, type InviteStore } from '../../host/stores/passkey-invites/store';
import { updateReviewerKeysFileAsync, type ReviewerPasskey } from '../../host/keys/reviewer-keys-file';
import { parseBody, sitePasskeys } from './decisions';
import { HttpError } from '../http/guard';
import type { InboxSite } from './site';

const PROMPT_TIMEOUT_MS = 120_000;
const MAX_PASSKEYS = 50;

const b64url = z.string().min(1).max(8_000).regex(/^[A-Za-z0-9_-]+$/, 'expected base64url');
const token = z.string().min(1).max(200);

const optionsRequestSchema = z.strictObject({ token });

/** The browser's `startRegistration` answer (RegistrationResponseJSON); the library checks the rest. */
const registrationResponseSchema = z.object({
  id: b64url,
  rawId: b64url,
  type: z.literal('public-key'),
  response: z.object({
    clientDataJSON: b64url,
    attestationObject: b64url,
    authenticatorData: b64url.optional(),
    transports: z.array(z.string().max(40)).max(10).optional(),
    publicKeyAlgorithm: z.number().optional(),
    publicKey: b64url.optional(),
  }),
  clientExtensionResults: z.record(z.string(), z.unknown()).default({}),
  authenticatorAttachment: z.enum(['platform', 'cross-platform']).optional(),
});

const completeRequestSchema = z.strictObject({ token, response: registrationResponseSchema });

function inviteFailure(err: unknown): never {
  if (err instanceof InviteError) throw new HttpError(err.reason === 'expired' ? 410 : 404, err.message);
  throw err;
}

/**
 * Passkey registration from an invite: options for the reviewer the
 * invite names, then the authenticator's answer verified (origin, RP id,
 * user verification) and its public key added to the reviewer keys file.
 * The invite is used up only when that succeeds.
 */
export class Registration {
  /** The challenge last issued per invite (by token hash): this process's memory, or the shared database. */
  private readonly challenges: ChallengeStore;

  constructor(
    private readonly deps: {
      readonly site: InboxSite;
      readonly invites: InviteStore;
      readonly keysFile: string;
      readonly challenges?: ChallengeStore;
      readonly now?: () => number;
    },
  ) {
    this.challenges = deps.challenges ?? new MemoryChallenges(deps.now);
  }

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  async options(body: unknown): Promise<{ readonly reviewer: string; readonly expiresAt: number; readonly options: unknown }> {
    const input = parseBody(optionsRequestSchema, body);
    let reviewer: string;
    let expiresAt: number;
    try {
      ({ reviewer, expiresAt } = await this.deps.invites.read(input.token));
    } catch (err) {
      inviteFailure(err);
    }
    const { site } = this.deps;
    const existing = sitePasskeys(this.deps.keysFile, reviewer, site).here;
    const options = await generateRegistrationOptions({
      rpName: 'airlock',
      rpID: site.rpId,
      userName: reviewer,
      userDisplayName: `${reviewer} (airlock reviewer)`,
      userID: reviewerUserHandle(reviewer),
      attestationType: 'none',
      excludeCredentials: existing.map((p) => ({ id: p.id, ...(p.transports !== undefined ? { transports: [...p.transports] } : {}) })),
      // Discoverable: a passkey then says whose it is on any browser (the page identifies the reviewer by it).
      authenticatorSelection: { residentKey: 'required', userVerification: 'required' },
      timeout: PROMPT_TIMEOUT_MS,
    });
    await this.challenges.put(hash(input.token), options.challenge, Math.min(expiresAt - this.now(), 2 * PROMPT_TIMEOUT_MS));
    return { reviewer, expiresAt, options };
  }

  async complete(body: unknown): Promise<{ readonly reviewer: string; readonly passkeyId: string }> {
    const input = parseBody(completeRequestSchema, body);
    const issued = await this.challenges.get(hash(input.token));
    try {
      return await this.deps.invites.consume(input.token, async (invite) => {
        if (issued === undefined) throw new HttpError(409, 'this registration was not started here, or took too long; reload the page and try again');
        const { site } = this.deps;
        let verification: Awaited<ReturnType<typeof verifyRegistrationResponse>>;
        try {
          verification = await verifyRegistrationResponse({
            response: input.response,
            expectedChallenge: issued,
            expectedOrigin: site.origin,
            expectedRPID: site.rpId,
            requireUserVerification: true,
          });
        } catch (err) {
          throw new HttpError(400, `the passkey registration does not verify: ${describeError(err)}`);
        }
        if (!verification.verified) throw new HttpError(400, 'the passkey registration does not verify');
        const { credential } = verification.registrationInfo;
        const passkey: ReviewerPasskey = {
          id: credential.id,
          publicKey: Buffer.from(credential.publicKey).toString('base64url'),
          rpId: site.rpId,
          origin: site.origin,
          addedAt: new Date(this.now()).toISOString(),
          ...(credential.transports !== undefined && credential.transports.length > 0 ? { transports: credential.transports.slice(0, 10) } : {}),
        };
        await updateReviewerKeysFileAsync(this.deps.keysFile, (entries) => {
          // A credential id names one passkey of one reviewer: a second registration of it (another key claiming
          // the id the page shows as someone's, or one replacing a reviewer's key) is refused.
          if (Object.values(entries).some((e) => (e.passkeys ?? []).some((p) => p.id === passkey.id))) {
            throw new HttpError(409, 'this passkey is already registered here; create a new passkey on your device and try again');
          }
          const entry = Object.hasOwn(entries, invite.reviewer) ? (entries[invite.reviewer] ?? {}) : {};
          const kept = entry.passkeys ?? [];
          if (kept.length >= MAX_PASSKEYS) throw new HttpError(409, `reviewer ${invite.reviewer} already has ${MAX_PASSKEYS} passkeys; remove one from the reviewer keys file first`);
          return { ...entries, [invite.reviewer]: { ...entry, passkeys: [...kept, passkey] } };
        });
        await this.challenges.delete(hash(input.token));
        return { reviewer: invite.reviewer, passkeyId: passkey.id };
      });
    } catch (err) {
      return inviteFailure(err);
    }
  }
}

/** The WebAuthn user handle of a reviewer: the same reviewer is the same user on an authenticator. */
export function reviewerUserHandle(reviewer: string): Uint8Array<ArrayBuffer> {
  return new Uint8Array(createHash('sha256').update(`airlock-reviewer:${reviewer}`).digest());
}

function hash(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
