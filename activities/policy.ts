import { randomBytes } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/activity';
import type { AuditEvent } from '../core/audit/events';
import { plan } from '../core/job/batch-plan';
import { type BatchPlan, type JobPolicyMemory, type RuleRef } from '../core/job/plan-schema';
import { AirlockError } from '../core/util/errors';
import { FailureTypes } from '../core/temporal/failure-types';
import type { Grant } from '../core/approval/grants';
import { judgeCallSummary, MAX_JUDGED_RULES, type JudgeCallSummary, type JudgeRuleInput } from '../core/judge/judge';
import type { CallFacts } from '../core/tools/facts';
import { callContext } from '../core/job/call-context';
import { evaluateCall, mayRequestApproval, needsFacts } from '../core/policy/evaluate';
import { type CallContext, type CallEvaluation, type JudgeCandidate, type JudgeVerdict, type RuleCounters } from '../core/policy/call-evaluation';
import type { JobScope } from '../core/policy/rules';
import type { PolicySnapshot } from '../core/policy/snapshot';
import type { PreflightedCall } from '../core/job/preflight';
import type { AuditSink } from '../host/stores/audit-log/store';
import type { ContentStore } from '../host/stores/contents/store';
import { canonicalJson } from '../core/util/canonical-json';
import type { GrantSigner } from '../host/keys/grant-keys';
import type { Sealer } from '../host/keys/seal';
import { writeAudit, type RecordAuditResult } from './audit';
import type { AirlockMetrics } from './metrics';

export interface PolicyDeps {
  /** Reads the rules as they are now; called once per job. */
  readonly loadSnapshot: () => Promise<PolicySnapshot>;
  readonly signer: GrantSigner;
  /** Seals the snapshot to the job; every evaluation checks the seal. */
  readonly sealer: Sealer;
  readonly grantTtlMs: number;
  readonly audit: AuditSink;
  /** Counts the decisions the audit events record; default: nothing. */
  readonly metrics?: AirlockMetrics;
  readonly now?: () => number;
  /** Where a job's snapshot is kept by its digest for the gate inside model turns; absent: every turn asks `evaluatePolicy`. */
  readonly contents?: ContentStore;
}

export interface LoadPolicySnapshotInput {
  readonly jobId: string;
}

export interface LoadPolicySnapshotResult {
  readonly snapshot: PolicySnapshot;
  /** This worker's seal binding the snapshot to the job (absent in results recorded by builds before seals). */
  readonly seal?: string;
}

/** The one input of every policy decision a job asks for. */
export interface EvaluatePolicyInput {
  readonly jobId: string;
  readonly scope: JobScope;
  readonly snapshot: PolicySnapshot;
  /** The seal `loadPolicySnapshot` gave the snapshot: no evaluation runs on a policy a client brought. */
  readonly policySeal?: string;
  readonly calls: readonly PreflightedCall[];
  readonly memory: JobPolicyMemory;
  readonly ruleCounters: RuleCounters;
  /** Workflow time, so cooldowns follow the job's clock. */
  readonly now: number;
  /** The tools side's facts of the calls' targets, by call id (absent: not asked yet; a missing call: unknown). */
  readonly facts?: Readonly<Record<string, CallFacts>>;
  /** The calls whose facts were asked of the tools side for `facts` (one without an answer there is unknown, and treated as the worst). */
  readonly factsAsked?: readonly string[];
  /** Last pass: the judge's verdicts by call id, then rule id. */
  readonly verdicts?: Readonly<Record<string, Readonly<Record<string, JudgeVerdict>>>>;
  /** Re-evaluating a reviewer's edits: the approval rules their approval covers, by call id. */
  readonly covered?: Readonly<Record<string, readonly RuleRef[]>>;
  /** The job's buffered audit events, written before anything else. */
  readonly audit?: readonly AuditEvent[];
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
  /** Absent when the tools side or the judge must answer first (see `factsFor`, `judge`). */
  readonly plan: BatchPlan | undefined;
  /** Judge questions; non-empty only on a pass with judged candidates and no verdicts. */
  readonly judge: readonly JudgeRequest[];
  /** Calls whose targets the tools side must resolve first; only on a pass without facts. */
  readonly factsFor?: readonly string[];
  /** Of `factsFor`, the calls a rule could park: the facts round prepares their approvals too (absent from builds before: all of them). */
  readonly prepareFor?: readonly string[];
  /** How writing the carried audit events went; only when the input carried some. */
  readonly audit?: RecordAuditResult;
}

export interface GrantRequest {
  readonly callId: string;
  readonly fingerprint: string;
  /** The approval request's nonce; omitted for an ungated call, which gets a fresh one. */
  readonly nonce?: string;
  /** An approved call whose `execute` carries the approval to check again: the grant binds that check (its digest), and `execute` insists on it. */
  readonly recheck?: string;
  /** An upstream MCP tool's definition digest in the job's snapshot: the grant binds it. */
  readonly definition?: string;
}

export interface IssueGrantsInput {
  readonly jobId: string;
  readonly calls: readonly GrantRequest[];
  /** The job's buffered audit events, written before the grants are signed. */
  readonly audit?: readonly AuditEvent[];
}

export interface IssueGrantsResult {
  readonly grants: Readonly<Record<string, Grant>>;
  /** How writing the carried audit events went; only when the input carried some. */
  readonly audit?: RecordAuditResult;
}

function contextOf(input: EvaluatePolicyInput, call: Extract<PreflightedCall, { kind: 'tool' }>): CallContext {
  const ctx = callContext(input.jobId, input.scope, call, input.facts?.[call.callId], input.snapshot.machines);
  // This evaluation carries the tools side's answers, and this call asked for some but got none.
  const missing = input.facts !== undefined && input.facts[call.callId] === undefined && (input.factsAsked ?? []).includes(call.callId);
  return missing ? { ...ctx, factsMissing: true } : ctx;
}

type ToolCallOf = Extract<PreflightedCall, { kind: 'tool' }>;

interface Contexted {
  readonly call: ToolCallOf;
  readonly ctx: CallContext;
}

/** Each tool call with its policy context, in call order, made once per pass: a context hashes its call, and a megabyte call takes milliseconds. */
function contextsOf(input: EvaluatePolicyInput): Contexted[] {
  return input.calls.flatMap((call) => (call.kind === 'tool' ? [{ call, ctx: contextOf(input, call) }] : []));
}

/** The contexts' state fingerprints by call id, for the plan; an id that repeats is left out (the plan hashes those calls itself). */
function fingerprintsOf(contexts: readonly Contexted[]): Map<string, string> {
  const out = new Map<string, string>();
  const repeated = new Set<string>();
  for (const { call, ctx } of contexts) {
    if (out.has(call.callId) || repeated.has(call.callId)) {
      out.delete(call.callId);
      repeated.add(call.callId);
    } else if (ctx.fingerprint !== undefined) out.set(call.callId, ctx.fingerprint);
  }
  return out;
}

function evaluations(input: EvaluatePolicyInput, contexts: readonly Contexted[]): { evaluations: Map<string, CallEvaluation>; judge: JudgeRequest[] } {
  const out = new Map<string, CallEvaluation>();
  const judge: JudgeRequest[] = [];
  for (const { call, ctx } of contexts) {
    const evaluation = evaluateCall(
      input.snapshot,
      'tool.before',
      ctx,
      input.ruleCounters,
      input.now,
      input.verdicts === undefined ? {} : { verdicts: input.verdicts[call.callId] ?? {} },
    );
    out.set(call.callId, evaluation);
    if (evaluation.judgeCandidates.length > 0) {
      judge.push({
        callId: call.callId,
        rules: evaluation.judgeCandidates.slice(0, MAX_JUDGED_RULES).map((c) => ({ id: c.ruleId, condition: c.condition })),
        candidates: evaluation.judgeCandidates,
        call: judgeCallSummary(call.toolName, call.category, call.args),
        cacheKey: `${input.snapshot.version}:${ctx.fingerprint ?? ''}`,
      });
    }
  }
  return { evaluations: out, judge };
}

/**
 * One pass of the planner over a batch, on a snapshot that carries this
 * worker's seal: a plan, or the questions (facts, judge) to answer first.
 */
export function decideBatch(sealer: Sealer, input: EvaluatePolicyInput): EvaluatePolicyResult {
  if (input.policySeal === undefined || !sealer.verify('policy', input.jobId, input.snapshot, input.policySeal)) {
    throw ApplicationFailure.nonRetryable(
      `job ${input.jobId}: its policy snapshot does not carry this agent worker's seal; a policy that did not come from loadPolicySnapshot is never evaluated`,
      FailureTypes.StateRejected,
    );
  }
  const contexts = contextsOf(input);
  if (input.facts === undefined) {
    const asked = contexts.filter(({ ctx }) => needsFacts(input.snapshot, 'tool.before', ctx));
    if (asked.length > 0) {
      const factsFor = asked.map(({ call }) => call.callId);
      const prepareFor = asked.flatMap(({ call, ctx }) => (mayRequestApproval(input.snapshot, 'tool.before', ctx) ? [call.callId] : []));
      return { plan: undefined, judge: [], factsFor, prepareFor };
    }
  }
  const { evaluations: byCall, judge } = evaluations(input, contexts);
  if (judge.length > 0) return { plan: undefined, judge };
  return { plan: plan({ ...input, evaluations: byCall, fingerprints: fingerprintsOf(contexts) }), judge: [] };
}

/** Signed grants, valid for `ttlMs`: approved calls keep their request's nonce, ungated ones get a fresh one. */
export function signGrants(deps: { readonly signer: GrantSigner; readonly grantTtlMs: number; readonly now: () => number }, jobId: string, calls: readonly GrantRequest[]): Record<string, Grant> {
  const grants: Record<string, Grant> = {};
  const expiresAt = deps.now() + deps.grantTtlMs;
  for (const c of calls) {
    grants[c.callId] = deps.signer.sign({
      v: 1,
      jobId,
      callId: c.callId,
      fingerprint: c.fingerprint,
      nonce: c.nonce ?? randomBytes(16).toString('hex'),
      expiresAt,
      ...(c.recheck !== undefined ? { recheck: c.recheck } : {}),
      ...(c.definition !== undefined ? { definition: c.definition } : {}),
    });
  }
  return grants;
}

/**
 * The snapshot under the digest its seal covers, for the model turns' gate.
 * A store that fails costs only that shortcut: turns then ask `evaluatePolicy`.
 */
async function keepSnapshot(deps: PolicyDeps, jobId: string, snapshot: PolicySnapshot): Promise<void> {
  try {
    await deps.contents?.put(canonicalJson(snapshot), jobId);
  } catch {
    // Nothing to do: the gate in the model turn reports the snapshot unavailable.
  }
}

export function createPolicyActivities(deps: PolicyDeps) {
  const now = deps.now ?? Date.now;

  return {
    /** The job's policy snapshot, taken once when it starts. */
    async loadPolicySnapshot(input: LoadPolicySnapshotInput): Promise<LoadPolicySnapshotResult> {
      try {
        const snapshot = await deps.loadSnapshot();
        await keepSnapshot(deps, input.jobId, snapshot);
        return { snapshot, seal: deps.sealer.seal('policy', input.jobId, snapshot) };
      } catch (err) {
        if (err instanceof AirlockError) throw ApplicationFailure.create({ message: err.message, type: FailureTypes.PolicyUnavailable, nonRetryable: true, cause: err });
        throw err;
      }
    },

    /**
     * Every policy decision of a job, for a whole batch at once: per-call
     * rule resolution (judged rules come back as questions first), per-job
     * memory, the batch outcome and the completion gate — or, for a
     * reviewer's edits, whether the edited calls may still run. No grants:
     * those are issued on the way to `execute`.
     */
    async evaluatePolicy(input: EvaluatePolicyInput): Promise<EvaluatePolicyResult> {
      const audit = input.audit === undefined ? undefined : await writeAudit(deps, input.audit);
      const result = decideBatch(deps.sealer, input);
      return audit === undefined ? result : { ...result, audit };
    },

    /** Grants for calls about to run: approved ones keep their request's nonce, ungated ones get a fresh one. */
    async issueGrants(input: IssueGrantsInput): Promise<IssueGrantsResult> {
      const audit = input.audit === undefined ? undefined : await writeAudit(deps, input.audit);
      const grants = signGrants({ ...deps, now }, input.jobId, input.calls);
      return audit === undefined ? { grants } : { grants, audit };
    },
  };
}

export type PolicyActivities = ReturnType<typeof createPolicyActivities>;
