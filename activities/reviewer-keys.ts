import { createPublicKey, verify, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { decisionSigningText, type DecisionPayload } from '../core/approvals';
import { AirlockError } from '../core/errors';

/** The reviewer keys file is unreadable or invalid. */
export class ReviewerKeysError extends AirlockError {
  override name = 'ReviewerKeysError';
  constructor(
    readonly file: string,
    detail: string,
  ) {
    super(`reviewer keys ${file}: ${detail}`);
  }
}

const keysFileSchema = z.strictObject({
  version: z.literal(1),
  /** Reviewer name → Ed25519 public key (PEM). */
  reviewers: z.record(z.string().min(1), z.string().includes('BEGIN PUBLIC KEY', { message: 'expected a PEM public key' })),
});

/** Reviewer name → public key, for verifying signed decisions. */
export type ReviewerKeys = ReadonlyMap<string, KeyObject>;

export async function loadReviewerKeys(file: string): Promise<ReviewerKeys> {
  let raw: unknown;
  try {
    raw = parseYaml(await readFile(file, 'utf8'));
  } catch (err) {
    throw new ReviewerKeysError(file, `cannot read it (${(err as Error).message.split('\n')[0]})`);
  }
  const parsed = keysFileSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new ReviewerKeysError(file, `${issue?.path.join('.') || '(file)'}: ${issue?.message ?? 'invalid'}`);
  }
  const keys = new Map<string, KeyObject>();
  for (const [name, pem] of Object.entries(parsed.data.reviewers)) {
    let key: KeyObject;
    try {
      key = createPublicKey(pem);
    } catch (err) {
      throw new ReviewerKeysError(file, `reviewers.${name}: not a readable public key (${(err as Error).message})`);
    }
    if (key.asymmetricKeyType !== 'ed25519') throw new ReviewerKeysError(file, `reviewers.${name}: expected an Ed25519 key`);
    keys.set(name, key);
  }
  return keys;
}

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
