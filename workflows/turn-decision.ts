import type { TurnPolicyInput, TurnPolicyResult } from '../activities/turn-policy';
import type { Grant } from '../core/approval/grants';
import type { EvaluatePolicyResult } from '../activities/policy';
import { MAX_TURN_GATED_CHARS, type PreflightedCall } from '../core/job/preflight';
import { canonicalJson } from '../core/util/canonical-json';
import type { Job } from './job';
import type { JobState } from './job-state';

/**
 * The policy check asked inside the model turn (see `activities/turn-policy.ts`):
 * what the job gives the turn, and when it may take the turn's answer
 * instead of asking `evaluatePolicy`. The planner, its input and the
 * audit are the same either way; only the history is shorter.
 */

/** What the model turn decided for its calls (its first pass, and grants when the batch runs as it is). */
export interface TurnDecision {
  readonly result: EvaluatePolicyResult;
  readonly grants?: Readonly<Record<string, Grant>>;
}

/** The policy input a model turn takes so its calls come back decided; none before the snapshot is sealed. */
export function turnPolicy(job: Job, state: JobState): TurnPolicyInput | undefined {
  const policySeal = state.policySeal;
  if (policySeal === undefined) return undefined;
  return {
    jobId: job.jobId,
    scope: job.input.scope,
    snapshotRef: state.snapshotRef,
    policySeal,
    memory: state.memory(),
    ruleCounters: state.ruleCounters,
    allowedTools: job.allowedTools,
  };
}

/**
 * The model turn's decision, used only when it was made on exactly the
 * calls this job preflighted and the policy memory it holds now;
 * otherwise the job asks `evaluatePolicy` itself.
 */
export function turnDecision(job: Job, state: JobState, asked: TurnPolicyInput | undefined, answer: TurnPolicyResult | undefined, calls: readonly PreflightedCall[]): TurnDecision | undefined {
  if (asked === undefined || answer?.kind !== 'decided') return undefined;
  const theirs = canonicalJson(answer.calls);
  if (theirs.length > MAX_TURN_GATED_CHARS || theirs !== canonicalJson(calls)) return undefined;
  const now = turnPolicy(job, state);
  if (now === undefined || canonicalJson([now.memory, now.ruleCounters, now.allowedTools]) !== canonicalJson([asked.memory, asked.ruleCounters, asked.allowedTools])) return undefined;
  return answer.grants === undefined ? { result: answer.result } : { result: answer.result, grants: answer.grants };
}
