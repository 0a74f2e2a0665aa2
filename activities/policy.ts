import { randomBytes } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/activity';
import { planBatch, type BatchPlan, type JobPolicyMemory, type PreflightedCall } from '../core/batch';
import { stateFingerprint } from '../core/fingerprint';
import { judgeCallSummary, MAX_JUDGED_RULES, type JudgeCallSummary, type JudgeRuleInput } from '../core/judge';
import { rulesUseDetectors } from '../core/policy/conditions';
import type { CallFacts } from '../core/policy/detectors';
import { getTool } from '../core/tools/definitions';
import { gatherFacts } from './policy-facts';
import { AirlockError } from '../core/errors';
import { FailureTypes } from '../core/failure-types';
import type { Grant } from '../core/grants';
import {
  evaluateCall,
  type CallEvaluation,
  type JobScope,
  type JudgeCandidate,
  type JudgeVerdict,
  type RuleCounters,
} from '../core/policy/evaluate';
import type { PolicySnapshot } from '../core/policy/snapshot';
import type { GrantSigner } from './grant-keys';

export interface PolicyDeps {
  /** Reads the rules as they are now; called once per job. */
  readonly loadSnapshot: () => Promise<PolicySnapshot>;
  readonly signer: GrantSigner;
  readonly grantTtlMs: number;
  readonly now?: () => number;
}

export interface LoadPolicySnapshotResult {
  readonly snapshot: PolicySnapshot;
}

export interface EvaluatePolicyInput {
  readonly jobId: string;
  readonly scope: JobScope;
  readonly snapshot: PolicySnapshot;
  readonly calls: readonly PreflightedCall[];
  readonly memory: JobPolicyMemory;
  readonly ruleCounters: RuleCounters;
  /** Workflow time, so cooldowns follow the job's clock. */
  readonly now: number;
  /** Second pass: the judge's verdicts by call id, then rule id. */
  readonly verdicts?: Readonly<Record<string, Readonly<Record<string, JudgeVerdict>>>>;
}

/** One batched judge question for one call. */
export interface JudgeRequest {
  readonly callId: string;
  /** At most ten, in rule order; candidates beyond count as a failed judgement. */
  readonly rules: JudgeRuleInput[];
  readonly candidates: JudgeCandidate[];
  readonly call: JudgeCallSummary;
  /** Snapshot version and the call's state fingerprint. */
  readonly cacheKey: string;
}

export interface EvaluatePolicyResult {
  /** Absent when the judge must answer first (see `judge`). */
  readonly plan: BatchPlan | undefined;
  /** Grants for the calls that run now, by call id (only when the whole batch runs). */
  readonly grants: Readonly<Record<string, Grant>>;
  /** Judge questions; non-empty only on a first pass with judged candidates. */
  readonly judge: readonly JudgeRequest[];
}

export interface GrantRequest {
  readonly callId: string;
  readonly fingerprint: string;
  /** The approval request's nonce; omitted for an ungated call, which gets a fresh one. */
  readonly nonce?: string;
}

export interface IssueGrantsInput {
  readonly jobId: string;
  readonly calls: readonly GrantRequest[];
}

export interface IssueGrantsResult {
  readonly grants: Readonly<Record<string, Grant>>;
}

export function createPolicyActivities(deps: PolicyDeps) {
  const now = deps.now ?? Date.now;

  function issue(jobId: string, calls: readonly GrantRequest[]): Record<string, Grant> {
    const grants: Record<string, Grant> = {};
    const expiresAt = now() + deps.grantTtlMs;
    for (const c of calls) {
      grants[c.callId] = deps.signer.sign({
        v: 1,
        jobId,
        callId: c.callId,
        fingerprint: c.fingerprint,
        nonce: c.nonce ?? randomBytes(16).toString('hex'),
        expiresAt,
      });
    }
    return grants;
  }

  return {
    /** The job's policy snapshot, taken once when it starts. */
    async loadPolicySnapshot(): Promise<LoadPolicySnapshotResult> {
      try {
        return { snapshot: await deps.loadSnapshot() };
      } catch (err) {
        if (err instanceof AirlockError) throw ApplicationFailure.nonRetryable(err.message, FailureTypes.PolicyUnavailable);
        throw err;
      }
    },

    /**
     * One evaluation for a whole batch (tool.before): per-call rule
     * resolution, per-job memory, batch outcome, and grants when it all runs.
     */
    async evaluatePolicy(input: EvaluatePolicyInput): Promise<EvaluatePolicyResult> {
      const evaluations = new Map<string, CallEvaluation>();
      const judge: JudgeRequest[] = [];
      const needFacts = rulesUseDetectors(input.snapshot.rules, ['symlink_path', 'mode_widening']);
      for (const call of input.calls) {
        if (call.kind !== 'tool') continue;
        const targets = getTool(call.toolName)?.targets(call.args) ?? [];
        const facts: CallFacts | undefined = needFacts ? await gatherFacts(targets, input.snapshot.detectors.roots) : undefined;
        const fingerprint = stateFingerprint(input.jobId, input.scope, call);
        const evaluation = evaluateCall(
          input.snapshot,
          'tool.before',
          { toolName: call.toolName, category: call.category, args: call.args, scope: input.scope, targets, facts, fingerprint },
          input.ruleCounters,
          input.now,
          input.verdicts === undefined ? {} : { verdicts: input.verdicts[call.callId] ?? {} },
        );
        evaluations.set(call.callId, evaluation);
        if (evaluation.judgeCandidates.length > 0) {
          judge.push({
            callId: call.callId,
            rules: evaluation.judgeCandidates.slice(0, MAX_JUDGED_RULES).map((c) => ({ id: c.ruleId, condition: c.condition })),
            candidates: evaluation.judgeCandidates,
            call: judgeCallSummary(call.toolName, call.category, call.args),
            cacheKey: `${input.snapshot.version}:${fingerprint}`,
          });
        }
      }
      if (judge.length > 0) return { plan: undefined, grants: {}, judge };
      const plan = planBatch({
        jobId: input.jobId,
        scope: input.scope,
        snapshot: input.snapshot,
        calls: input.calls,
        evaluations,
        memory: input.memory,
      });
      const runnable =
        plan.outcome === 'run'
          ? plan.calls.flatMap((p) => (p.fate.kind === 'run' ? [{ callId: p.call.callId, fingerprint: p.fate.fingerprint }] : []))
          : [];
      return { plan, grants: issue(input.jobId, runnable), judge: [] };
    },

    /** Grants for calls that run after a park: approved ones keep their request's nonce. */
    async issueGrants(input: IssueGrantsInput): Promise<IssueGrantsResult> {
      return { grants: issue(input.jobId, input.calls) };
    },
  };
}

export type PolicyActivities = ReturnType<typeof createPolicyActivities>;
