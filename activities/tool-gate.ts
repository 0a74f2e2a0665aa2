import { randomBytes, randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/activity';
import { FailureTypes } from '../core/failure-types';
import { callFingerprint } from '../core/fingerprint';
import type { Grant } from '../core/grants';
import { describeChanges, type ObservedState } from '../core/observed-state';
import type { JobScope } from '../core/policy/evaluate';
import { getTool, type ToolDefinition } from '../core/tools/definitions';
import type { GrantVerifier } from '../host/grant-keys';
import { storedOutcome, type NonceStore, type StoredOutcome } from '../host/nonce-store';
import { errnoCode, messageOf } from '../host/tools/descriptors';
import { createFsTools, type ToolOutcome } from '../host/tools/fs-tools';
import { DEFAULT_HASH_LIMIT_BYTES, observe } from '../host/tools/observe';
import type { TreeLimits } from '../host/tools/tree';
import { ToolRefusal, type Roots } from '../host/roots';

export interface ToolGateDeps {
  readonly roots: Roots;
  readonly nonces: NonceStore;
  readonly verifier: GrantVerifier;
  readonly hashLimitBytes?: number;
  /** Folders past these cannot be observed exactly, so calls on them are never approvable to run. */
  readonly treeLimits?: TreeLimits;
  readonly now?: () => number;
}

export interface PrepareApprovalInput {
  readonly toolName: string;
  readonly args: Record<string, unknown>;
}

export interface PrepareApprovalResult {
  readonly requestId: string;
  /** 128 bits from the OS's cryptographic RNG. */
  readonly nonce: string;
  readonly observed: ObservedState[];
  /** Problems the reviewer should know about, e.g. a target the tool will refuse. */
  readonly warnings: string[];
}

export interface RevalidateInput {
  readonly toolName: string;
  /** The arguments that will run (edited ones when the reviewer edited the call). */
  readonly args: Record<string, unknown>;
  /**
   * The targets `prepareApproval` observed, compared position by position
   * (only the targets: the arguments travel once, a large write stays under
   * Temporal's payload limit). Builds before sent `originalArgs` instead.
   */
  readonly originalTargets?: readonly string[];
  readonly originalArgs?: Record<string, unknown>;
  readonly allowedTools: readonly string[];
  readonly reviewer: string;
  readonly reviewers: readonly string[] | null;
  readonly separateRequester: boolean;
  readonly requester: string;
  /** What the reviewer saw, one entry per original target. */
  readonly observed: readonly ObservedState[];
}

export type RevalidateResult = { readonly ok: true } | { readonly ok: false; readonly reason: string };

/** What an approved call is checked against right before it runs: `RevalidateInput` without what `execute` carries anyway. */
export type ApprovedCheck = Omit<RevalidateInput, 'toolName' | 'args'>;

export interface ExecuteInput {
  readonly jobId: string;
  readonly callId: string;
  readonly scope: JobScope;
  readonly toolName: string;
  readonly args: Record<string, unknown>;
  /** The gating rule, null for an ungated call: part of the fingerprint the grant binds. */
  readonly ruleId: string | null;
  readonly ruleVersion: number | null;
  readonly grant: Grant;
  /**
   * For an approved call: schema, permission and the targets as the
   * reviewer saw them, checked in the same attempt, right before the side
   * effect (one round trip fewer than a separate `revalidate`, and a
   * shorter window between the check and the use).
   */
  readonly approved?: ApprovedCheck;
}

export type ExecuteResult =
  | (ToolOutcome & {
      /** True when this reports an earlier attempt's stored outcome instead of running again. */
      readonly replayed: boolean;
      readonly refused?: undefined;
    })
  /** The approved call no longer holds: nothing ran and the nonce is unspent. */
  | { readonly refused: string; readonly ok: false; readonly output: string; readonly replayed: false };

function toolOrFail(name: string): ToolDefinition {
  const tool = getTool(name);
  if (tool === undefined || tool.category === 'control') {
    throw ApplicationFailure.nonRetryable(`unknown tool ${JSON.stringify(name)}`, FailureTypes.InvalidInput);
  }
  return tool;
}

export function createToolGateActivities(deps: ToolGateDeps) {
  const hashLimit = deps.hashLimitBytes ?? DEFAULT_HASH_LIMIT_BYTES;
  const now = deps.now ?? Date.now;
  const fsTools = createFsTools(deps.roots, { treeLimits: deps.treeLimits });
  const readOnly = (tool: ToolDefinition) => tool.category === 'read';

  /**
   * Each target as it is now, with (by position) why the tool or the
   * approval will refuse it. A target that cannot be observed is recorded
   * as seen-as-missing: the same failure later compares equal.
   */
  async function observeTargets(
    tool: ToolDefinition,
    args: unknown,
  ): Promise<{ observed: ObservedState[]; problems: Array<string | undefined>; warnings: string[] }> {
    const observed: ObservedState[] = [];
    const problems: Array<string | undefined> = [];
    const warnings: string[] = [];
    const follow = readOnly(tool);
    const refused = (reason: string) => {
      problems.push(reason);
      warnings.push(`the tool will refuse this call: ${reason}`);
    };
    for (const target of tool.targets(args)) {
      try {
        const seen = await observe(deps.roots, target, { follow, hashLimitBytes: hashLimit, deep: true, treeLimits: deps.treeLimits });
        observed.push(seen);
        if (seen.exists && seen.type === 'symlink' && !follow) refused(`${target} is a symbolic link; the tool refuses to act on a link`);
        // Too large to digest exactly: never approvable, since revalidation cannot compare it.
        else if (seen.exists && seen.tree?.complete === false) refused(seen.tree.reason);
        else problems.push(undefined);
      } catch (err) {
        if (err instanceof ToolRefusal) refused(err.message);
        else {
          const reason = `${target} cannot be observed (${errnoCode(err) ?? messageOf(err)})`;
          problems.push(reason);
          warnings.push(reason);
        }
        observed.push({ path: target, exists: false });
      }
    }
    return { observed, problems, warnings };
  }

  /** Schema, permission and preconditions, checked again against the world as it is now. */
  async function recheck(input: RevalidateInput): Promise<RevalidateResult> {
    const tool = getTool(input.toolName);
    if (tool === undefined) return { ok: false, reason: `tool ${input.toolName} is no longer registered` };
    const parsed = tool.parameters.safeParse(input.args);
    if (!parsed.success) {
      return { ok: false, reason: `the arguments no longer pass the tool's schema: ${parsed.error.issues[0]?.message ?? ''}` };
    }
    if (!input.allowedTools.includes(input.toolName)) {
      return { ok: false, reason: `tool ${input.toolName} is not allowed for this job` };
    }
    if (input.reviewers !== null && !input.reviewers.includes(input.reviewer)) {
      return { ok: false, reason: `reviewer ${input.reviewer} is not allowed to approve this call` };
    }
    if (input.separateRequester && input.reviewer === input.requester) {
      return { ok: false, reason: `the requester ${input.requester} may not approve their own call` };
    }
    const targetsNow = tool.targets(parsed.data);
    const targetsThen = input.originalTargets ?? (input.originalArgs === undefined ? targetsNow : tool.targets(tool.parameters.parse(input.originalArgs)));
    const { observed: current, problems } = await observeTargets(tool, parsed.data);
    const changes: string[] = [];
    current.forEach((now, i) => {
      const before = input.observed[i];
      const problem = problems[i];
      // A target the reviewer replaced by an edit was chosen by them, not observed: nothing to compare.
      if (before === undefined || targetsThen[i] !== targetsNow[i]) return;
      // It cannot be seen now (e.g. a folder on the way became a link out), unlike then: say why, not "no longer exists".
      if (problem !== undefined && !now.exists && (before.exists || before.path !== now.path)) changes.push(problem);
      else if (before.path !== now.path) changes.push(`${targetsNow[i]} now leads to ${now.path} (it led to ${before.path})`);
      else changes.push(...describeChanges(before, now));
    });
    if (changes.length > 0) return { ok: false, reason: `the target changed since it was approved: ${changes.join('; ')}` };
    return { ok: true };
  }

  return {
    /** Captures what the reviewer will approve: the target's state now, plus the request's nonce. */
    async prepareApproval(input: PrepareApprovalInput): Promise<PrepareApprovalResult> {
      const tool = toolOrFail(input.toolName);
      const args = tool.parameters.parse(input.args);
      const { observed, warnings } = await observeTargets(tool, args);
      return { requestId: randomUUID(), nonce: randomBytes(16).toString('hex'), observed, warnings };
    },

    /** Schema, permission and preconditions, checked again against the world as it is now (builds before checked inside `execute`). */
    revalidate: recheck,

    /**
     * Runs one granted call, once. The nonce is consumed (compare-and-set)
     * before the side effect; a retry finds it consumed and reports the stored
     * outcome instead of running again.
     */
    async execute(input: ExecuteInput): Promise<ExecuteResult> {
      if (!deps.verifier.verify(input.grant)) {
        throw ApplicationFailure.nonRetryable('execute refused: the grant is missing or its signature is invalid', FailureTypes.GrantInvalid);
      }
      const claims = input.grant.claims;
      if (claims.jobId !== input.jobId || claims.callId !== input.callId) {
        throw ApplicationFailure.nonRetryable('execute refused: the grant is for another call', FailureTypes.GrantInvalid);
      }
      const tool = toolOrFail(input.toolName);
      const parsed = tool.parameters.safeParse(input.args);
      if (!parsed.success) {
        throw ApplicationFailure.nonRetryable('execute refused: the arguments do not pass the tool schema', FailureTypes.GrantInvalid);
      }
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
      // A retry of an attempt that ran reports it: the target changed because the call ran.
      const earlier = deps.nonces.lookup(claims.nonce);
      if (earlier !== undefined) return reportEarlier(earlier);
      if (now() > claims.expiresAt) {
        throw ApplicationFailure.nonRetryable('execute refused: the grant has expired', FailureTypes.GrantExpired);
      }
      if (input.approved !== undefined) {
        const check = await recheck({ ...input.approved, toolName: input.toolName, args: input.args });
        if (!check.ok) return { refused: check.reason, ok: false, output: '', replayed: false };
      }
      const consumed = deps.nonces.consume({ nonce: claims.nonce, jobId: input.jobId, callId: input.callId, fingerprint });
      if (!consumed.consumed) return reportEarlier(consumed);
      let outcome: ToolOutcome;
      try {
        const run = fsTools[input.toolName as keyof typeof fsTools] as ((a: unknown) => Promise<ToolOutcome>) | undefined;
        outcome = run === undefined ? { ok: false, output: `Error: tool ${input.toolName} has no implementation here` } : await run(parsed.data);
      } catch (err) {
        // The nonce is spent: an unexpected failure is an outcome, never a retry.
        outcome = { ok: false, output: `Error: ${(err as Error).message}` };
      }
      deps.nonces.recordOutcome(claims.nonce, storedOutcome(outcome));
      return { ...outcome, replayed: false };
    },
  };
}

function reportEarlier(earlier: { outcome: StoredOutcome | null; consumedAt: string }): ExecuteResult {
  if (earlier.outcome !== null) {
    const { ok, outputBytes } = earlier.outcome;
    // The store keeps no tool output: the earlier attempt's result is reported, its output is not.
    return { ok, output: `This call already ran at ${earlier.consumedAt} (${ok ? 'it succeeded' : 'it failed'}, ${outputBytes} bytes of output, not kept).`, replayed: true };
  }
  throw ApplicationFailure.nonRetryable(
    `this call was already attempted at ${earlier.consumedAt} and its outcome is unknown; it will not run again`,
    FailureTypes.NonceConsumed,
  );
}

export type ToolGateActivities = ReturnType<typeof createToolGateActivities>;
