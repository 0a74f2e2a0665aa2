import { canonicalJson } from '../core/util/canonical-json';
import { sha256Hex } from '../core/util/sha256';
import type { PolicySnapshot } from '../core/policy/snapshot';
import type { Sealer } from '../host/keys/seal';

export interface SealPolicyInput {
  readonly jobId: string;
  readonly snapshot: PolicySnapshot;
}

export interface SealStateInput {
  readonly jobId: string;
  /** Exactly the input the job hands to continue-as-new (its carried state included), without the seal. */
  readonly next: unknown;
}

export interface SealStateResult {
  readonly seal: string;
  /**
   * sha256 of the canonical JSON the seal covers: the job continues as new
   * only with exactly that input (absent in results of builds before it).
   */
  readonly sealedDigest?: string;
}

export interface VerifyStateInput extends SealStateInput {
  readonly seal: string | undefined;
}

export type VerifyStateResult = { readonly valid: true } | { readonly valid: false; readonly reason: string };

/**
 * Seals that make workflow input trustworthy: only this worker's key makes
 * them, so a client cannot start a job with a policy or state of its own.
 */
export function createSealActivities(deps: { readonly sealer: Sealer }) {
  return {
    /** A snapshot the job already trusts (loaded by a build before seals) gets its seal. */
    async sealPolicy(input: SealPolicyInput): Promise<{ readonly seal: string }> {
      return { seal: deps.sealer.seal('policy', input.jobId, input.snapshot) };
    },

    /** The input a job continues as new with, its carried state included. */
    async sealState(input: SealStateInput): Promise<SealStateResult> {
      return { seal: deps.sealer.seal('state', input.jobId, input.next), sealedDigest: sha256Hex(canonicalJson(input.next)) };
    },

    async verifyState(input: VerifyStateInput): Promise<VerifyStateResult> {
      if (input.seal === undefined) return { valid: false, reason: 'it carries no seal' };
      return deps.sealer.verify('state', input.jobId, input.next, input.seal)
        ? { valid: true }
        : { valid: false, reason: "its seal does not match this job and input under this agent worker's key" };
    },
  };
}
