import { canonicalJson } from '../util/canonical-json';
import type { JobScope } from '../policy/rules';
import { sha256Hex } from '../util/sha256';

export interface FingerprintInput {
  /** The workflow id, never the run id: the fingerprint survives continue-as-new. */
  readonly jobId: string;
  readonly scope: JobScope;
  readonly toolName: string;
  /** Arguments after schema parsing, so `{}` and `{recursive:false}` are the same call. */
  readonly normalizedArgs: unknown;
  /** The rule that gates the call; null for a call no rule gates. */
  readonly ruleId: string | null;
  readonly ruleVersion: number | null;
}

/** The canonical JSON of exactly these fields: the text a fingerprint hashes. */
export function fingerprintText(input: FingerprintInput): string {
  return canonicalJson({
    jobId: input.jobId,
    scope: { piece: input.scope.piece ?? null, movement: input.scope.movement ?? null },
    toolName: input.toolName,
    normalizedArgs: input.normalizedArgs,
    ruleId: input.ruleId,
    ruleVersion: input.ruleVersion,
  });
}

/** SHA-256 of `fingerprintText`. */
export function callFingerprint(input: FingerprintInput): string {
  return sha256Hex(fingerprintText(input));
}

/** The call itself, no rule: what grants for ungated calls bind and what de-duplication compares. */
export function stateFingerprint(jobId: string, scope: JobScope, call: { readonly toolName: string; readonly args: unknown }): string {
  return callFingerprint({ jobId, scope, toolName: call.toolName, normalizedArgs: call.args, ruleId: null, ruleVersion: null });
}
