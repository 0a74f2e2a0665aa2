import { createPublicKey, type KeyObject } from 'node:crypto';
import { statSync } from 'node:fs';
import { readReviewerKeysFile, ReviewerKeysError, type ReviewerPasskey } from './reviewer-keys-file';

export { ReviewerKeysError } from './reviewer-keys-file';

/**
 * What the agent workers verify decisions with: each reviewer's Ed25519
 * key (`get`, so a `Map` of keys serves too) and passkeys.
 */
export interface ReviewerKeys {
  get(reviewer: string): KeyObject | undefined;
  passkeys?(reviewer: string): readonly ReviewerPasskey[];
}

interface Loaded {
  readonly stamp: string;
  readonly keys: ReadonlyMap<string, KeyObject>;
  readonly passkeys: ReadonlyMap<string, readonly ReviewerPasskey[]>;
}

function stampOf(file: string): string {
  try {
    const s = statSync(file);
    return `${s.ino}:${s.size}:${s.mtimeMs}`;
  } catch {
    return 'missing';
  }
}

function load(file: string): Loaded {
  const stamp = stampOf(file);
  if (stamp === 'missing') return { stamp, keys: new Map(), passkeys: new Map() };
  const entries = readReviewerKeysFile(file);
  const keys = new Map<string, KeyObject>();
  const passkeys = new Map<string, readonly ReviewerPasskey[]>();
  for (const [name, entry] of Object.entries(entries)) {
    if (entry.key !== undefined) {
      let key: KeyObject;
      try {
        key = createPublicKey(entry.key);
      } catch (err) {
        throw new ReviewerKeysError(file, `reviewers.${name}: not a readable public key (${(err as Error).message})`, err);
      }
      if (key.asymmetricKeyType !== 'ed25519') throw new ReviewerKeysError(file, `reviewers.${name}: expected an Ed25519 key`);
      keys.set(name, key);
    }
    if (entry.passkeys !== undefined && entry.passkeys.length > 0) passkeys.set(name, entry.passkeys);
  }
  return { stamp, keys, passkeys };
}

/**
 * The keys file as the agent workers read it: loaded (and checked) at
 * start, read again when it changes, so a reviewer added or a passkey
 * registered counts without a restart. A file that turns invalid is an
 * error on every verification (fail closed) until it is fixed.
 */
export class ReviewerKeysFile implements ReviewerKeys {
  private loaded: Loaded;

  private constructor(readonly file: string) {
    this.loaded = load(file);
  }

  static open(file: string, options: { readonly mustExist: boolean }): ReviewerKeysFile {
    if (options.mustExist && stampOf(file) === 'missing') throw new ReviewerKeysError(file, 'cannot read it (no such file); create it with `airlock reviewer add NAME`, or unset AIRLOCK_REVIEWER_KEYS');
    return new ReviewerKeysFile(file);
  }

  private current(): Loaded {
    if (stampOf(this.file) !== this.loaded.stamp) this.loaded = load(this.file);
    return this.loaded;
  }

  get(reviewer: string): KeyObject | undefined {
    return this.current().keys.get(reviewer);
  }

  passkeys(reviewer: string): readonly ReviewerPasskey[] {
    return this.current().passkeys.get(reviewer) ?? [];
  }
}

/** Loads a keys file once (a missing one is an error). */
export async function loadReviewerKeys(file: string): Promise<ReviewerKeys> {
  return ReviewerKeysFile.open(file, { mustExist: true });
}
