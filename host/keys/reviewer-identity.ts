import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { localReviewerKeyFile, type ReviewerKeyPaths } from './reviewer-key-file';
import { updateReviewerKeysFile } from './reviewer-keys-file';

/**
 * Creates a reviewer's Ed25519 key on first use (private key 0600 in a 0700
 * folder) and lists its public half in the reviewer keys file, so decisions
 * from this machine are signed and the agent workers can verify them.
 * Returns the private key file; an existing key is kept.
 */
export function ensureLocalReviewer(paths: ReviewerKeyPaths, reviewer: string): { readonly keyFile: string; readonly created: boolean } {
  const keyFile = localReviewerKeyFile(paths, reviewer);
  if (existsSync(keyFile)) return { keyFile, created: false };
  const pair = generateKeyPairSync('ed25519');
  mkdirSync(paths.reviewerKeyDir, { recursive: true, mode: 0o700 });
  writeFileSync(keyFile, pair.privateKey.export({ type: 'pkcs8', format: 'pem' }), { mode: 0o600, flag: 'wx' });
  const key = String(pair.publicKey.export({ type: 'spki', format: 'pem' }));
  // Passkeys the reviewer already has stay listed.
  updateReviewerKeysFile(paths.reviewerKeys, (entries) => ({ ...entries, [reviewer]: { ...entries[reviewer], key } }));
  return { keyFile, created: true };
}
