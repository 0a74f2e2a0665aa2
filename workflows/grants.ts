import type { ApprovedCheck } from '../activities/tool-gate';
import { approvedCheckDigest, type Grant } from '../core/approval/grants';
import type { ApprovedRun, CallStep, RunStep } from '../core/job/call-steps';
import { getTool } from '../core/tools/registry';
import { definitionClaim } from '../core/tools/upstream/upstream-spec';
import { local } from './activities';
import type { Job } from './job';

/**
 * Grants for the calls about to run, issued right before they need them:
 * each binds one exact call (its fingerprint and nonce), an approved call's
 * check again inside its `execute` attempt, and an upstream MCP tool's
 * definition as the job's rules judged it.
 */

/** This call, and the following ones of the batch that will run without another check. */
export function grantWindow(steps: readonly CallStep[], index: number, granted: ReadonlyMap<string, Grant>): RunStep[] {
  const [first, ...rest] = steps.slice(index).filter((s): s is RunStep => s.kind === 'run');
  if (first === undefined) return [];
  const window = [first];
  for (const s of rest) {
    if (s.approved !== undefined) break;
    if (!granted.has(s.call.callId)) window.push(s);
  }
  return window;
}

export async function issueGrants(job: Job, steps: readonly RunStep[]): Promise<Readonly<Record<string, Grant>>> {
  if (steps.length === 0) return {};
  const calls = steps.map(({ call, binding, approved }) => ({
    callId: call.callId,
    fingerprint: binding.fingerprint,
    ...(binding.nonce !== undefined ? { nonce: binding.nonce } : {}),
    // An approved call is checked again inside its `execute` attempt: the grant binds what that check compares.
    ...(approved !== undefined ? { recheck: approvedCheckDigest(approvedCheck(job, approved)) } : {}),
    // An upstream MCP tool is sent only to the definition the job's rules judged.
    ...definitionClaim(job.state?.snapshot.tools?.upstream, call.toolName),
  }));
  const audit = job.audit.carry();
  const result = await local.issueGrants({ jobId: job.jobId, calls, ...(audit !== undefined ? { audit } : {}) });
  job.audit.settle(audit, result.audit);
  return result.grants;
}

/** What an approved call is checked against before it runs: the reviewer's permission and the targets as they saw them. */
export function approvedCheck(job: Job, { request }: ApprovedRun): ApprovedCheck {
  return {
    originalTargets: getTool(request.toolName)?.targets(request.args) ?? [],
    allowedTools: job.allowedTools,
    reviewer: request.decision.reviewer,
    reviewers: request.reviewers,
    separateRequester: request.separateRequester,
    requester: request.requester,
    observed: request.observed,
    // The card promised an undo: the call runs only if it can still keep one; a rule chose none: nothing is kept.
    ...(request.undo?.reversible === true ? { reversible: true } : {}),
    ...(request.undo?.reversible === false && request.undo.byRule !== undefined ? { keep: false as const } : {}),
  };
}
