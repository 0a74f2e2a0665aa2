import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { AirlockError } from '../../core/util/errors';

/*
 * Where a local reviewer's private key lives. Kept apart from creating keys
 * (reviewer-identity.ts), so `airlock approve` finds its key without loading YAML.
 */

/** A reviewer name that cannot name a key file. */
export class ReviewerNameError extends AirlockError {
  override name = 'ReviewerNameError';
  constructor(readonly reviewer: string) {
    super(`reviewer name ${JSON.stringify(reviewer)} cannot have a key here: use letters, digits, ".", "_", "-" (set AIRLOCK_REVIEWER or --reviewer)`);
  }
}

/** A reviewer name that can name a key file (and so travels in decisions, invites and the keys file). */
export const reviewerNamePattern = /^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$/;

export interface ReviewerKeyPaths {
  /** The public keys the agent workers read (reviewer name → PEM). */
  readonly reviewerKeys: string;
  /** One private key per local reviewer, `<name>.pem`. */
  readonly reviewerKeyDir: string;
}

/** Where a local reviewer's private key lives (whether or not it exists yet). */
export function localReviewerKeyFile(paths: ReviewerKeyPaths, reviewer: string): string {
  if (!reviewerNamePattern.test(reviewer)) throw new ReviewerNameError(reviewer);
  return join(paths.reviewerKeyDir, `${reviewer}.pem`);
}

/** This machine's key for a reviewer, if there is one (a name that cannot have a key file has none). */
export function existingLocalReviewerKey(paths: ReviewerKeyPaths, reviewer: string): string | undefined {
  if (!reviewerNamePattern.test(reviewer)) return undefined;
  const file = join(paths.reviewerKeyDir, `${reviewer}.pem`);
  return existsSync(file) ? file : undefined;
}
