import type { KeyObject } from 'node:crypto';
import type { ApprovedCheck, ExecuteInput } from '../../activities/tool-gate';
import type { createToolGateActivities } from '../../activities/tool-gate';
import { callFingerprint } from '../../core/approval/fingerprint';
import { getTool } from '../../core/tools/registry';
import { createGrantSigner } from '../../host/keys/grant-keys';

type Gate = ReturnType<typeof createToolGateActivities>;

/**
 * A call as a job hands it to `execute` after a reviewer approved it: the
 * card prepared by the real gate (its nonce, observed targets and
 * reversibility), a grant signed over the call's fingerprint, and the check
 * the approval carries.
 */
export function approvedCalls(options: { readonly gate: () => Gate; readonly privateKey: KeyObject; readonly jobId?: string; readonly reviewer?: string }) {
  const signer = createGrantSigner(options.privateKey);
  const jobId = options.jobId ?? 'job-1';
  let calls = 0;
  return async (toolName: string, args: Record<string, unknown>, callId = `c${++calls}`) => {
    const prepared = await options.gate().prepareApproval({ toolName, args });
    const fingerprint = callFingerprint({ jobId, scope: {}, toolName, normalizedArgs: args, ruleId: 'r', ruleVersion: 1 });
    const grant = signer.sign({ v: 1, jobId, callId, fingerprint, nonce: prepared.nonce, expiresAt: Date.now() + 60_000 });
    const approved: ApprovedCheck = {
      originalTargets: getTool(toolName)?.targets(args) ?? [],
      allowedTools: [toolName],
      reviewer: options.reviewer ?? 'alice',
      reviewers: null,
      separateRequester: false,
      requester: 'tester',
      observed: prepared.observed,
      ...(prepared.undo?.reversible === true ? { reversible: true } : {}),
    };
    const input: ExecuteInput = { jobId, callId, scope: {}, toolName, args, ruleId: 'r', ruleVersion: 1, grant, approved };
    return { prepared, input };
  };
}
