import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';
import { z } from 'zod';
import { AirlockError } from '../core/errors';
import { localReviewerKeyFile, type ReviewerKeyPaths } from './reviewer-key-file';

const keysFileSchema = z.object({ version: z.literal(1), reviewers: z.record(z.string(), z.string()) });

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
  const existing = existsSync(paths.reviewerKeys) ? keysFileSchema.safeParse(parseYaml(readFileSync(paths.reviewerKeys, 'utf8'))) : undefined;
  if (existing !== undefined && !existing.success) {
    throw new AirlockError(`reviewer keys ${paths.reviewerKeys}: not a keys file (version: 1, reviewers: {...}); fix it, then run this again`);
  }
  const reviewers = { ...(existing?.data.reviewers ?? {}), [reviewer]: String(pair.publicKey.export({ type: 'spki', format: 'pem' })) };
  mkdirSync(dirname(paths.reviewerKeys), { recursive: true, mode: 0o700 });
  // Written whole, then renamed: the agent workers never read half a file.
  const scratch = `${paths.reviewerKeys}.${process.pid}.tmp`;
  writeFileSync(scratch, stringifyYaml({ version: 1, reviewers }), { mode: 0o600 });
  renameSync(scratch, paths.reviewerKeys);
  return { keyFile, created: true };
}
