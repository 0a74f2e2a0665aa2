import { randomBytes, randomUUID } from 'node:crypto';
import { ApplicationFailure } from '@temporalio/activity';
import { FailureTypes } from '../core/temporal/failure-types';
import { callFingerprint } from '../core/approval/fingerprint';
import type { Grant } from '../core/approval/grants';
import type { ObservedState } from '../core/tools/observed-state';
import type { JobScope } from '../core/policy/rules';
import { revalidateWith } from '../core/tools/compare';
import { lendHost } from '../core/tools/lend';
import { getTool, type AnyTool } from '../core/tools/registry';
import type { Capability, HostFor } from '../core/tools/tool-host';
import type { Prepared, ToolOutcome } from '../core/tools/tool-module';
import { ToolRefusal } from '../core/tools/tool-refusal';
import type { GrantVerifier } from '../host/grant-keys';
import { Texts } from '../core/job/texts';
import { NonceStoreUnusable, revealPaths, storedOutcome, type NonceStore, type Reconciled, type StoredOutcome } from '../host/nonce-store';
import { attemptAbandoned, currentAttempt, withHeartbeat } from './heartbeat';
import { messageOf } from '../host/tools/descriptors';
import { createCallJournal } from '../host/tools/move-journal';
import { createToolHost, type ToolHostDeps } from '../host/tools/tool-host';
import { noMetrics, type AirlockMetrics, type ExecutionOutcome } from './metrics';

export interface ToolGateDeps extends ToolHostDeps {
  readonly nonces: NonceStore;
  readonly verifier: GrantVerifier;
  readonly now?: () => number;
  /**
   * TEST ONLY (`AIRLOCK_TEST_CRASH_AT`): `execute` stops at this point,
   * says so on stderr, and waits there for the test to kill the process.
   */
  readonly testCrashAt?: CrashPoint;
  /** How long a consumed nonce's holder must have been silent before a retry settles it; default 20 s. */
  readonly claimStaleMs?: number;
  /** Counts executions and reconciliations; default: nothing. */
  readonly metrics?: AirlockMetrics;
  /** Where calls keep their journals (a file per grant nonce); unset: tools that need one (bulk moves) refuse to run. */
  readonly journalDir?: string;
}

/**
 * Where a test may stop `execute`: after consuming the nonce, after the
 * effect and before its outcome is recorded, or inside a bulk move after
 * N entries moved and the next one renamed, before its journal says so.
 */
export type CrashPoint = 'after-consume' | 'after-effect' | `mid-batch:${number}`;

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

export type RevalidateResult =
  | { readonly ok: true }
  /** `notNeeded`: the tool says the call has nothing left to do (a service healthy again); not a failure, and the model is told so. */
  | { readonly ok: false; readonly reason: string; readonly notNeeded?: true };

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
      readonly notNeeded?: undefined;
      /**
       * Set when an earlier attempt ended without recording an outcome and
       * this one settled the call from its target: the effect was in place
       * (`ran_before`), or it was not and the target was as before the call,
       * so it ran now (`ran_now`), or neither could be told (`unknown`, `ok`
       * false). Absent in results from builds before reconciliation.
       */
      readonly reconciled?: Reconciled;
    })
  /** The approved call no longer holds: nothing ran and the nonce is unspent. */
  | { readonly refused: string; readonly ok: false; readonly output: string; readonly replayed: false; readonly notNeeded?: undefined; readonly reconciled?: undefined }
  /** The approved call has nothing left to do (the tool's revalidation says why): nothing ran, the nonce is unspent, and this is no failure. */
  | { readonly notNeeded: string; readonly ok: true; readonly output: string; readonly replayed: false; readonly refused?: undefined; readonly reconciled?: undefined };

function toolOrFail(name: string): AnyTool {
  const tool = getTool(name);
  if (tool === undefined || tool.category === 'control') {
    throw ApplicationFailure.nonRetryable(`unknown tool ${JSON.stringify(name)}`, FailureTypes.InvalidInput);
  }
  return tool;
}

function notConfigured(tool: AnyTool, missing: readonly Capability[]): string {
  return `tool ${tool.name} is not configured on this tools worker (its tools config grants no ${missing.join(', ')})`;
}

export function createToolGateActivities(deps: ToolGateDeps) {
  const now = deps.now ?? Date.now;
  const metrics = deps.metrics ?? noMetrics;
  const host = createToolHost(deps);
  const readOnly = (tool: AnyTool, args: unknown) => tool.categoryOf(args) === 'read';

  /** The host the tool's hooks get; a tool this worker is not configured for is refused, never run half-way. */
  function lent(tool: AnyTool): HostFor<Capability> {
    const loan = lendHost(tool, host);
    if (!loan.ok) throw ApplicationFailure.nonRetryable(notConfigured(tool, loan.missing), FailureTypes.ToolUnavailable);
    return loan.host;
  }

  /** The host of one call's hooks: the lent capabilities, plus the journal kept under the call's nonce. */
  function callHost(tool: AnyTool, nonce: string): HostFor<Capability> {
    const base = lent(tool);
    if (deps.journalDir === undefined) return base;
    return { ...base, journal: createCallJournal(deps.journalDir, nonce, { beforeAppend: midBatchPause() }) };
  }

  /** TEST ONLY: with `mid-batch:N`, a journal stops for good before it records its (N+1)th moved entry. */
  function midBatchPause(): ((record: Readonly<Record<string, unknown>>) => Promise<void>) | undefined {
    const point = deps.testCrashAt;
    if (point === undefined || !point.startsWith('mid-batch:')) return undefined;
    const after = Number(point.slice('mid-batch:'.length));
    let moved = 0;
    return async (record) => {
      if (record.step !== 'moved' || ++moved <= after) return;
      process.stderr.write(`airlock test: execute paused ${point} (AIRLOCK_TEST_CRASH_AT)\n`);
      await new Promise<never>(() => undefined);
    };
  }

  /** The tool's `prepare`, whose per-target problems become the reviewer's warnings. */
  async function observeTargets(tool: AnyTool, args: unknown): Promise<Prepared & { warnings: string[] }> {
    const prepared = await tool.prepare(lent(tool), args);
    const warnings = prepared.problems.flatMap((p) => (p === undefined ? [] : [p.kind === 'refused' ? `the tool will refuse this call: ${p.reason}` : p.reason]));
    return { ...prepared, warnings };
  }

  /** Schema, permission and preconditions, checked again against the world as it is now; on success, the targets as seen. */
  async function recheck(input: RevalidateInput): Promise<{ readonly result: RevalidateResult; readonly seen?: ObservedState[] }> {
    const tool = getTool(input.toolName);
    if (tool === undefined || tool.category === 'control') return { result: { ok: false, reason: `tool ${input.toolName} is no longer registered` } };
    const parsed = tool.parameters.safeParse(input.args);
    if (!parsed.success) {
      return { result: { ok: false, reason: `the arguments no longer pass the tool's schema: ${parsed.error.issues[0]?.message ?? ''}` } };
    }
    if (!input.allowedTools.includes(input.toolName)) {
      return { result: { ok: false, reason: `tool ${input.toolName} is not allowed for this job` } };
    }
    if (input.reviewers !== null && !input.reviewers.includes(input.reviewer)) {
      return { result: { ok: false, reason: `reviewer ${input.reviewer} is not allowed to approve this call` } };
    }
    if (input.separateRequester && input.reviewer === input.requester) {
      return { result: { ok: false, reason: `the requester ${input.requester} may not approve their own call` } };
    }
    const loan = lendHost(tool, host);
    if (!loan.ok) return { result: { ok: false, reason: notConfigured(tool, loan.missing) } };
    const targetsNow = tool.targets(parsed.data);
    const targetsThen = input.originalTargets ?? (input.originalArgs === undefined ? targetsNow : tool.targets(tool.parameters.parse(input.originalArgs)));
    const current = await observeTargets(tool, parsed.data);
    const verdict = await revalidateWith(tool, loan.host, { args: parsed.data, approved: input.observed, now: current, targetsThen, targetsNow });
    if (verdict.kind === 'changed') return { result: { ok: false, reason: verdict.reason } };
    if (verdict.kind === 'not_needed') return { result: { ok: false, reason: verdict.reason, notNeeded: true } };
    return { result: { ok: true }, seen: current.observed };
  }

  /** TEST ONLY: stops here for good when the test asked for it, so it can kill the process at exactly this point. */
  async function crashPoint(point: CrashPoint): Promise<void> {
    if (deps.testCrashAt !== point) return;
    process.stderr.write(`airlock test: execute paused ${point} (AIRLOCK_TEST_CRASH_AT)\n`);
    await new Promise<never>(() => undefined);
  }

  /** Runs the tool itself; a failure inside it is an outcome (the nonce is spent), never a retry. */
  async function runTool(tool: AnyTool, args: unknown, before: readonly ObservedState[] | undefined, nonce: string): Promise<ToolOutcome> {
    // Temporal already gave up on this attempt (another may be running): start no effect; the next attempt reconciles.
    if (attemptAbandoned()) throw ApplicationFailure.retryable('this attempt was abandoned before its effect; the next attempt reconciles', FailureTypes.AttemptAbandoned);
    try {
      return await tool.execute(callHost(tool, nonce), args, before);
    } catch (err) {
      if (err instanceof ToolRefusal) return { ok: false, output: `Refused: ${err.message}` };
      return { ok: false, output: `Error: ${messageOf(err)}` };
    }
  }

  function checkExpiry(grant: Grant): void {
    if (now() > grant.claims.expiresAt) {
      throw ApplicationFailure.nonRetryable('execute refused: the grant has expired', FailureTypes.GrantExpired);
    }
  }

  /**
   * A consumed nonce without an outcome is settled only once its holder has
   * been silent this long: a live attempt renews it every heartbeat (2 s),
   * and Temporal retries only after the 15 s heartbeat timeout.
   */
  const claimStaleMs = deps.claimStaleMs ?? 20_000;

  interface Settling {
    readonly input: ExecuteInput;
    readonly tool: AnyTool;
    readonly args: Record<string, unknown>;
    readonly fingerprint: string;
    /** The targets right before the call, when known: recorded at consume, else what the reviewer approved. */
    readonly before: readonly ObservedState[] | undefined;
    /** The nonce is consumed in this store (an attempt died after consuming); false: this store does not know it. */
    readonly consumedHere: boolean;
    readonly phase: { value: string };
    readonly held: { nonce?: string };
    /** Set when this attempt settled the call itself (not when it reports another attempt's settlement). */
    readonly settled: { value?: Reconciled };
  }

  /**
   * An earlier attempt ended without an outcome in this store: it consumed
   * the nonce and died, or this store does not know what it did (a lost or
   * restored store). The target says what happened:
   * - the tool's postcondition holds: its effect is in place, record and report that;
   * - it does not, and the target is exactly as it was right before the call
   *   (the approved state): the effect never happened, so run it now. That
   *   attempt is over: Temporal starts a new attempt only after the previous
   *   one failed or its heartbeat or start-to-close timeout passed, and an
   *   attempt Temporal gave up on starts no effect once it learns so (its
   *   next heartbeat). The remaining window: a worker process frozen or cut
   *   off from Temporal for longer than the heartbeat timeout, between its
   *   own check and its effect, which it then still runs;
   * - neither: the outcome is unknown, and is reported as such.
   */
  async function settle(s: Settling): Promise<ExecuteResult> {
    const nonce = s.input.grant.claims.nonce;
    s.phase.value = 'reconciling';
    if (s.consumedHere && !deps.nonces.claim(nonce, claimStaleMs)) {
      // Another attempt holds it and is alive (a duplicate, or the one before is not dead yet): look again later.
      throw ApplicationFailure.retryable('another attempt of this call is still working on it; this one will look again', FailureTypes.NonceConsumed);
    }
    s.held.nonce = nonce;
    // The targets now: the precondition compares them, and they give the store's path digests their paths back.
    const tool = s.tool;
    const current = await observeTargets(tool, s.args);
    const before = s.before === undefined ? undefined : revealPaths(s.before, current.observed);
    const post = tool.postcondition === undefined ? { present: false, detail: `${tool.name} declares no postcondition` } : await tool.postcondition(callHost(tool, nonce), s.args, before);
    // A store that does not know the nonce gets it consumed now, as the first attempt would have.
    const consumeHere = () => deps.nonces.consume({ nonce, jobId: s.input.jobId, callId: s.input.callId, fingerprint: s.fingerprint, ...(s.before !== undefined ? { before: s.before } : {}) });
    const record = (outcome: ToolOutcome, reconciled: Reconciled) => {
      if (!s.consumedHere && !consumeHere().consumed) return false;
      deps.nonces.recordOutcome(nonce, storedOutcome(outcome, reconciled));
      return true;
    };
    if (post.present) {
      const outcome = { ok: true, output: Texts.reconciledRanBefore(post.detail) };
      if (!record(outcome, 'ran_before')) return reportEarlierOrFail(deps.nonces, nonce);
      s.settled.value = 'ran_before';
      return { ...outcome, replayed: true, reconciled: 'ran_before' };
    }
    let unchanged: string | undefined;
    if (post.undetectable === true) unchanged = 'its effect cannot be told from its target';
    else if (before === undefined) unchanged = 'nothing records the target as it was before the call';
    else {
      const targets = tool.targets(s.args);
      // The tool's own precondition; a target past the limits compares as "cannot be compared": not unchanged.
      const verdict = await revalidateWith(tool, callHost(tool, nonce), { args: s.args, approved: before, now: current, targetsThen: targets, targetsNow: targets });
      if (verdict.kind !== 'ok') unchanged = verdict.reason;
    }
    if (unchanged === undefined) {
      checkExpiry(s.input.grant);
      if (!s.consumedHere) {
        const consumed = consumeHere();
        if (!consumed.consumed) return reportEarlier(consumed);
        s.held.nonce = nonce;
      }
      s.phase.value = 'effect';
      const outcome = await runTool(tool, s.args, before, nonce);
      await crashPoint('after-effect');
      deps.nonces.recordOutcome(nonce, storedOutcome(outcome, 'ran_now'));
      s.settled.value = 'ran_now';
      return { ok: outcome.ok, output: `${outcome.output}\n${Texts.reconciledRanNow}`, replayed: false, reconciled: 'ran_now' };
    }
    const outcome = { ok: false, output: Texts.outcomeUnknown(`${post.detail}; ${unchanged}`) };
    // Spent from now on: a duplicate of this grant reports the same instead of guessing again.
    if (!record(outcome, 'unknown')) return reportEarlierOrFail(deps.nonces, nonce);
    s.settled.value = 'unknown';
    return { ...outcome, replayed: true, reconciled: 'unknown' };
  }

  return {
    /** Captures what the reviewer will approve: the target's state now, plus the request's nonce. */
    async prepareApproval(input: PrepareApprovalInput): Promise<PrepareApprovalResult> {
      return withHeartbeat(
        () => ({ phase: 'observing' }),
        async () => {
          const tool = toolOrFail(input.toolName);
          const args = tool.parameters.parse(input.args);
          const { observed, warnings } = await observeTargets(tool, args);
          return { requestId: randomUUID(), nonce: randomBytes(16).toString('hex'), observed, warnings };
        },
      );
    },

    /** Schema, permission and preconditions, checked again against the world as it is now (builds before checked inside `execute`). */
    async revalidate(input: RevalidateInput): Promise<RevalidateResult> {
      return withHeartbeat(
        () => ({ phase: 'observing' }),
        async () => (await recheck(input)).result,
      );
    },

    /**
     * Runs one granted call, once. The nonce is consumed (compare-and-set)
     * before the side effect, with the targets as they were right then; a
     * retry finds it and reports the stored outcome, or, when the attempt
     * that consumed it died before recording one, reconciles (`settle`).
     */
    async execute(input: ExecuteInput): Promise<ExecuteResult> {
      const phase = { value: 'checking' };
      // The nonce this attempt consumed or claimed: renewed at every beat, so no retry settles it while this attempt lives.
      const held: { nonce?: string } = {};
      const settled: { value?: Reconciled } = {};
      const result = await withHeartbeat(
        () => {
          if (held.nonce !== undefined) deps.nonces.renew(held.nonce);
          return { phase: phase.value, store: deps.nonces.id };
        },
        () =>
          executeOnce(input, phase, held, settled).catch((err: unknown) => {
            if (err instanceof NonceStoreUnusable) throw ApplicationFailure.retryable(err.message, FailureTypes.NonceStoreUnusable);
            throw err;
          }),
      );
      // Counted once the attempt has its answer; an attempt that throws is the SDK's `temporal_activity_execution_failed`.
      if (settled.value !== undefined) metrics.reconciled(input.toolName, settled.value);
      metrics.executed(input.toolName, executionOutcome(result, settled.value));
      return result;
    },
  };

  async function executeOnce(input: ExecuteInput, phase: { value: string }, held: { nonce?: string }, settled: { value?: Reconciled }): Promise<ExecuteResult> {
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
    lent(tool);
    const changing = !readOnly(tool, args);
    const approvedBefore = approvedTargets(tool, args, input.approved);
    // A retry of an attempt that ran reports it: the target changed because the call ran.
    const earlier = deps.nonces.lookup(claims.nonce);
    if (earlier !== undefined && earlier.outcome !== null) return reportEarlier(earlier);
    if (earlier !== undefined && !changing) {
      // A read whose attempt died changed nothing: it reads again.
      const outcome = await runTool(tool, args, undefined, claims.nonce);
      deps.nonces.recordOutcome(claims.nonce, storedOutcome(outcome));
      return { ...outcome, replayed: false };
    }
    if (earlier !== undefined) return settle({ input, tool, args, fingerprint, before: earlier.before ?? approvedBefore, consumedHere: true, phase, held, settled });
    // A retry this store knows nothing about: the earlier attempt may have consumed the nonce in a store since lost.
    if (changing && currentAttempt() > 1) return settle({ input, tool, args, fingerprint, before: approvedBefore, consumedHere: false, phase, held, settled });
    checkExpiry(input.grant);
    let before: ObservedState[] | undefined;
    if (input.approved !== undefined) {
      const check = await recheck({ ...input.approved, toolName: input.toolName, args: input.args });
      if (!check.result.ok && check.result.notNeeded === true) return { notNeeded: check.result.reason, ok: true, output: Texts.notNeeded(check.result.reason), replayed: false };
      if (!check.result.ok) return { refused: check.result.reason, ok: false, output: '', replayed: false };
      before = check.seen;
    } else if (changing) {
      // What a retry compares against, should this attempt die between consuming and recording.
      before = (await observeTargets(tool, args)).observed;
    }
    const consumed = deps.nonces.consume({ nonce: claims.nonce, jobId: input.jobId, callId: input.callId, fingerprint, ...(before !== undefined ? { before } : {}) });
    if (!consumed.consumed) return reportEarlier(consumed);
    held.nonce = claims.nonce;
    await crashPoint('after-consume');
    phase.value = 'effect';
    const outcome = await runTool(tool, args, before, claims.nonce);
    await crashPoint('after-effect');
    deps.nonces.recordOutcome(claims.nonce, storedOutcome(outcome));
    return { ...outcome, replayed: false };
  }
}

/**
 * How an `execute` ended, for the metrics: refused before running; settled
 * from the target by this attempt; another attempt's stored outcome
 * reported again; or run now, with the tool's own success.
 */
export function executionOutcome(result: ExecuteResult, settledNow: Reconciled | undefined): ExecutionOutcome {
  if (result.refused !== undefined || result.notNeeded !== undefined) return 'refused';
  if (settledNow !== undefined) return settledNow;
  if (result.replayed) return 'replayed';
  return result.ok ? 'ok' : 'failed';
}

/** The approved targets, by position, where the call still acts on them (an edit may have replaced one). */
function approvedTargets(tool: AnyTool, args: Record<string, unknown>, approved: ApprovedCheck | undefined): ObservedState[] | undefined {
  if (approved === undefined) return undefined;
  const now = tool.targets(args);
  const then = approved.originalTargets ?? now;
  if (now.length !== approved.observed.length || now.some((t, i) => then[i] !== t)) return undefined;
  return [...approved.observed];
}

function reportEarlier(earlier: { outcome: StoredOutcome | null; consumedAt: string }): ExecuteResult {
  if (earlier.outcome !== null) {
    const { ok, outputBytes, reconciled } = earlier.outcome;
    if (reconciled === 'unknown') {
      return { ok: false, output: Texts.outcomeUnknown(`settled at an earlier retry; the call was first attempted at ${earlier.consumedAt}`), replayed: true, reconciled };
    }
    // The store keeps no tool output: the earlier attempt's result is reported, its output is not.
    return {
      ok,
      output: `This call already ran at ${earlier.consumedAt} (${ok ? 'it succeeded' : 'it failed'}, ${outputBytes} bytes of output, not kept).`,
      replayed: true,
      ...(reconciled !== undefined ? { reconciled } : {}),
    };
  }
  // Only a concurrent attempt gets here (its consume won between this one's look and its own).
  throw ApplicationFailure.retryable(`this call is being run by another attempt since ${earlier.consumedAt}; this one will look again`, FailureTypes.NonceConsumed);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Another attempt settled the nonce between this one's look and its write. */
function reportEarlierOrFail(nonces: NonceStore, nonce: string): ExecuteResult {
  const earlier = nonces.lookup(nonce);
  if (earlier === undefined) throw ApplicationFailure.retryable(`nonce ${nonce} vanished from the store while settling`, FailureTypes.NonceConsumed);
  return reportEarlier(earlier);
}

export type ToolGateActivities = ReturnType<typeof createToolGateActivities>;
