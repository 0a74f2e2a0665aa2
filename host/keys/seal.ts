import { createHash, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { canonicalJson } from '../../core/util/canonical-json';

/** What a seal vouches for: the policy snapshot a job runs under, or the whole state it carries into its next run. */
export type SealPurpose = 'policy' | 'state';

/**
 * The agent worker's seal: an Ed25519 signature (with its grant key) over a
 * value bound to one job. Workflow input is whatever a client sends, so a
 * policy or carried state is trusted only with a seal only this worker can make.
 */
export interface Sealer {
  seal(purpose: SealPurpose, jobId: string, value: unknown): string;
  verify(purpose: SealPurpose, jobId: string, value: unknown, seal: string): boolean;
}

function sealText(purpose: SealPurpose, jobId: string, value: unknown): Buffer {
  const digest = createHash('sha256').update(canonicalJson(value)).digest('hex');
  return Buffer.from(canonicalJson({ purpose: `airlock-${purpose}-seal`, jobId, digest }));
}

export function createSealer(privateKey: KeyObject): Sealer {
  const publicKey = createPublicKey(privateKey);
  return {
    seal: (purpose, jobId, value) => sign(null, sealText(purpose, jobId, value), privateKey).toString('base64'),
    verify(purpose, jobId, value, seal) {
      try {
        return verify(null, sealText(purpose, jobId, value), publicKey, Buffer.from(seal, 'base64'));
      } catch {
        return false;
      }
    },
  };
}
