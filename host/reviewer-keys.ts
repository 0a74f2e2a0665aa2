import { createPublicKey, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { AirlockError } from '../core/errors';

/** The reviewer keys file is unreadable or invalid. */
export class ReviewerKeysError extends AirlockError {
  override name = 'ReviewerKeysError';
  constructor(
    readonly file: string,
    detail: string,
    cause?: unknown,
  ) {
    super(`reviewer keys ${file}: ${detail}`, { cause });
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
    throw new ReviewerKeysError(file, `cannot read it (${(err as Error).message.split('\n')[0]})`, err);
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
      throw new ReviewerKeysError(file, `reviewers.${name}: not a readable public key (${(err as Error).message})`, err);
    }
    if (key.asymmetricKeyType !== 'ed25519') throw new ReviewerKeysError(file, `reviewers.${name}: expected an Ed25519 key`);
    keys.set(name, key);
  }
  return keys;
}

