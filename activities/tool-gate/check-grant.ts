import { ApplicationFailure } from '@temporalio/activity';
import { callFingerprint } from '../../core/approval/fingerprint';
import { approvedCheckDigest, type Grant } from '../../core/approval/grants';
import { FailureTypes } from '../../core/temporal/failure-types';
import type { AnyTool } from '../../core/tools/registry';
import type { GrantVerifier } from '../../host/keys/grant-keys';
import type { ExecuteInput } from './messages';
import { toolOrFail } from './runner';

/** A call whose grant holds: the tool, its parsed arguments and the fingerprint the grant binds. */
export interface GrantedCall {
  readonly tool: AnyTool;
  readonly args: Record<string, unknown>;
  readonly fingerprint: string;
}

/**
 * The first step of `execute`: the grant is signed by the agent side's key,
 * names this job and call, and binds exactly these arguments (their
 * fingerprint). Anything else is refused for good: a retry cannot mend it.
 */
export function checkGrant(verifier: GrantVerifier, input: ExecuteInput): GrantedCall {
  if (!verifier.verify(input.grant)) {
    throw ApplicationFailure.nonRetryable('execute refused: the grant is missing or its signature is invalid', FailureTypes.GrantInvalid);
  }
  const claims = input.grant.claims;
  if (claims.recheck !== undefined && input.approved === undefined) {
    throw ApplicationFailure.nonRetryable('execute refused: this grant is for an approved call, which runs only with its approval checked again in the same attempt', FailureTypes.GrantInvalid);
  }
  if (typeof claims.recheck === 'string' && input.approved !== undefined && approvedCheckDigest(input.approved) !== claims.recheck) {
    throw ApplicationFailure.nonRetryable('execute refused: the approval to check is not the one this grant was issued with', FailureTypes.GrantInvalid);
  }
  if (claims.jobId !== input.jobId || claims.callId !== input.callId) {
    throw ApplicationFailure.nonRetryable('execute refused: the grant is for another call', FailureTypes.GrantInvalid);
  }
  const tool = toolOrFail(input.toolName);
  const parsed = tool.parameters.safeParse(input.args);
  if (!parsed.success) {
    throw ApplicationFailure.nonRetryable('execute refused: the arguments do not pass the tool schema', FailureTypes.GrantInvalid);
  }
  const args = parsed.data;
  if (!isRecord(args)) throw ApplicationFailure.nonRetryable('execute refused: the arguments are not an object', FailureTypes.GrantInvalid);
  const fingerprint = callFingerprint({
    jobId: input.jobId,
    scope: input.scope,
    toolName: input.toolName,
    normalizedArgs: parsed.data,
    ruleId: input.ruleId,
    ruleVersion: input.ruleVersion,
  });
  if (fingerprint !== claims.fingerprint) {
    throw ApplicationFailure.nonRetryable('execute refused: the grant does not cover these arguments', FailureTypes.GrantInvalid);
  }
  return { tool, args, fingerprint };
}

/** Checked right before an effect starts, so a call parked past its grant's life never runs. */
export function checkExpiry(grant: Grant, now: number): void {
  if (now > grant.claims.expiresAt) {
    throw ApplicationFailure.nonRetryable('execute refused: the grant has expired', FailureTypes.GrantExpired);
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
