import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { generateAuthenticationOptions, verifyAuthenticationResponse } from '@simplewebauthn/server';
import { z } from 'zod';
import { describeError } from '../../core/temporal/describe-error';
import { MemoryChallenges, type ChallengeStore } from '../../host/stores/passkey-invites/store';
import { readReviewerKeysFile, type ReviewerPasskey } from '../../host/keys/reviewer-keys-file';
import { authenticationResponseSchema, parseBody } from './decisions';
import { HttpError } from '../http/guard';
import { RateLimit } from './rate-limit';
import { reviewerUserHandle } from './registration';
import type { InboxSite } from './site';

/**
 * Which reviewer is at the page, from a passkey alone: a browser that does
 * not remember a name (another device, storage cleared) asks for any
 * passkey of this site (a discoverable credential), and the server answers
 * whose it is. The answer only names the reviewer for the page: the
 * decision that follows is signed with the passkey again and verified by
 * the job, so a wrong name yields a rejected decision, nothing more.
 */

/** How long the browser's prompt may stay open. */
const PROMPT_TIMEOUT_MS = 60_000;
/** A challenge is good once, for the prompt's time and a little more. */
export const IDENTIFY_CHALLENGE_TTL_MS = PROMPT_TIMEOUT_MS + 30_000;

/** How many identifications the page starts (and answers) per window. */
export interface IdentifyLimits {
  readonly overall: number;
  readonly windowMs: number;
}

/** A person identifies once per browser; a script asking for challenges in bulk is cut off. */
export const DEFAULT_IDENTIFY_LIMITS: IdentifyLimits = { overall: 120, windowMs: 10 * 60_000 };

const optionsRequestSchema = z.strictObject({});
const identifyRequestSchema = z.strictObject({ response: authenticationResponseSchema });
/** What the page needs of the client data to find the challenge; the library checks all of it. */
const clientDataSchema = z.object({ challenge: z.string().min(1).max(200) });

/** The challenge store holds registration challenges too: ours are keyed apart. */
function challengeKey(challenge: string): string {
  return `identify:${createHash('sha256').update(challenge).digest('hex')}`;
}

export class Identify {
  private readonly challenges: ChallengeStore;
  private readonly limit: RateLimit;
  /** Challenges being answered right now in this process: the same one twice at once is refused. */
  private readonly answering = new Set<string>();

  constructor(
    private readonly deps: {
      readonly site: InboxSite;
      readonly keysFile: string;
      /** Where challenges wait: this process's memory, or the shared database (several page processes). */
      readonly challenges?: ChallengeStore;
      readonly limits?: IdentifyLimits;
      readonly now?: () => number;
    },
  ) {
    this.challenges = deps.challenges ?? new MemoryChallenges(deps.now);
    const limits = deps.limits ?? DEFAULT_IDENTIFY_LIMITS;
    this.limit = new RateLimit(limits.overall, limits.windowMs, deps.now);
  }

  private admit(step: 'options' | 'answer'): void {
    if (this.limit.take(step)) return;
    const limits = this.deps.limits ?? DEFAULT_IDENTIFY_LIMITS;
    throw new HttpError(429, `the page took ${limits.overall} passkey identifications in ${Math.round(limits.windowMs / 60_000)} minutes; try again later`);
  }

  /** Options for a prompt that offers any passkey of this site (empty allowCredentials), with a one-time challenge. */
  async options(body: unknown): Promise<{ readonly options: unknown }> {
    parseBody(optionsRequestSchema, body);
    this.admit('options');
    const { site } = this.deps;
    const options = await generateAuthenticationOptions({ rpID: site.rpId, allowCredentials: [], userVerification: 'required', timeout: PROMPT_TIMEOUT_MS });
    await this.challenges.put(challengeKey(options.challenge), options.challenge, IDENTIFY_CHALLENGE_TTL_MS);
    return { options };
  }

  /** The reviewer whose registered passkey (for this site) signed a challenge this page issued, which is then used up. */
  async answer(body: unknown): Promise<{ readonly reviewer: string }> {
    const { response } = parseBody(identifyRequestSchema, body);
    if (response.id !== response.rawId) throw new HttpError(400, 'invalid request: response: id and rawId differ');
    const challenge = challengeOf(response.response.clientDataJSON);
    const key = challengeKey(challenge);
    if (this.answering.has(key)) throw new HttpError(409, 'this identification is already being answered');
    this.answering.add(key);
    try {
      // Used up before it is checked (one step, even across page processes): a failed answer cannot be tried again with the same challenge.
      const issued = await this.challenges.take(key);
      if (issued === undefined) throw new HttpError(409, 'this identification was not started here, or took too long; try again');
      // Counted only for a challenge this page issued: answers to nothing cannot use up the identifications of the people it served.
      this.admit('answer');
      const found = this.passkeyOf(response.id);
      if (response.response.userHandle !== undefined && response.response.userHandle !== Buffer.from(reviewerUserHandle(found.reviewer)).toString('base64url')) {
        throw new HttpError(400, `the passkey names another user than reviewer ${found.reviewer}, whose passkey it is registered as`);
      }
      const { site } = this.deps;
      let verified: boolean;
      try {
        const result = await verifyAuthenticationResponse({
          response: { id: response.id, rawId: response.rawId, type: 'public-key', clientExtensionResults: {}, response: response.response },
          expectedChallenge: issued,
          expectedOrigin: site.origin,
          expectedRPID: site.rpId,
          expectedType: 'webauthn.get',
          requireUserVerification: true,
          // Counters are the job's to track (it verifies every decision); naming the reviewer needs none.
          credential: { id: found.passkey.id, publicKey: Buffer.from(found.passkey.publicKey, 'base64url'), counter: 0 },
        });
        verified = result.verified;
      } catch (err) {
        throw new HttpError(400, `the passkey does not verify: ${describeError(err)}`);
      }
      if (!verified) throw new HttpError(400, 'the passkey does not verify');
      return { reviewer: found.reviewer };
    } finally {
      this.answering.delete(key);
    }
  }

  /** The one reviewer a credential of this site is registered to. */
  private passkeyOf(credentialId: string): { readonly reviewer: string; readonly passkey: ReviewerPasskey } {
    const { site, keysFile } = this.deps;
    const entries = existsSync(keysFile) ? readReviewerKeysFile(keysFile) : {};
    const matches = Object.entries(entries).flatMap(([reviewer, entry]) =>
      (entry.passkeys ?? []).filter((p) => p.id === credentialId && p.rpId === site.rpId && p.origin === site.origin).map((passkey) => ({ reviewer, passkey })),
    );
    const [only, ...more] = matches;
    if (only === undefined) {
      throw new HttpError(404, `this passkey is not registered to any reviewer on ${site.origin}; run \`airlock reviewer add NAME --passkey\` and open the link it prints`);
    }
    if (more.length > 0) throw new HttpError(409, `this passkey is registered to several reviewers (${matches.map((m) => m.reviewer).join(', ')}); fix the reviewer keys file`);
    return only;
  }
}

/** The challenge the client data names (base64url JSON); anything else there is the library's to check. */
function challengeOf(clientDataJSON: string): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(clientDataJSON, 'base64url').toString('utf8'));
  } catch {
    throw new HttpError(400, 'invalid request: response.response.clientDataJSON: not JSON');
  }
  const data = clientDataSchema.safeParse(parsed);
  if (!data.success) throw new HttpError(400, 'invalid request: response.response.clientDataJSON: no challenge');
  return data.data.challenge;
}
