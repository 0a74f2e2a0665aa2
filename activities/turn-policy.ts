import { definitionClaim } from '../core/tools/upstream/upstream-spec';
import type { Grant } from '../core/approval/grants';
import type { JobPolicyMemory } from '../core/job/plan-schema';
import { MAX_TURN_GATED_CHARS, preflight, type PreflightedCall } from '../core/job/preflight';
import { canonicalJson } from '../core/util/canonical-json';
import type { AssistantMessage } from '../core/model/chat';
import type { RuleCounters } from '../core/policy/call-evaluation';
import type { JobScope } from '../core/policy/rules';
import { policySnapshotSchema, type PolicySnapshot } from '../core/policy/snapshot';
import { describeError } from '../core/temporal/describe-error';
import type { ContentStore } from '../host/stores/contents/store';
import type { GrantSigner } from '../host/keys/grant-keys';
import type { Sealer } from '../host/keys/seal';
import { decideBatch, signGrants, type EvaluatePolicyResult } from './policy';

/**
 * The policy check asked inside the model turn: the activity that brings
 * the model's calls also brings the planner's first pass over them, and
 * grants for a batch that runs as it is, so an allowed call costs no
 * separate policy or grant step in the job's history. Same planner, same
 * input as `evaluatePolicy` (the snapshot by its digest from the content
 * store, checked against the job's seal); the workflow uses the answer
 * only when its own preflight of the calls and its policy memory are what
 * the activity saw, and otherwise asks `evaluatePolicy` as before.
 */

/** The policy input of a turn, as the workflow holds it when it asks the model. */
export interface TurnPolicyInput {
  readonly jobId: string;
  readonly scope: JobScope;
  /** SHA-256 of the snapshot's canonical JSON: its key in the content store (`loadPolicySnapshot` put it there). */
  readonly snapshotRef: string;
  readonly policySeal: string;
  readonly memory: JobPolicyMemory;
  readonly ruleCounters: RuleCounters;
  readonly allowedTools: readonly string[];
}

export type TurnPolicyResult =
  | {
      readonly kind: 'decided';
      /** The calls as this activity preflighted them: the workflow compares them with its own. */
      readonly calls: readonly PreflightedCall[];
      /** The planner's first pass: a plan, or the facts or judge questions to answer first. */
      readonly result: EvaluatePolicyResult;
      /** Grants for every call of a batch that runs (none when it parks, stops or is redirected). */
      readonly grants?: Readonly<Record<string, Grant>>;
    }
  /** The gate could not be asked here (a snapshot the store does not hold, a seal this worker did not make): the job asks `evaluatePolicy`. */
  | { readonly kind: 'unavailable'; readonly reason: string };

export interface TurnPolicyDeps {
  readonly contents: ContentStore;
  readonly sealer: Sealer;
  readonly signer: GrantSigner;
  readonly grantTtlMs: number;
  readonly now?: () => number;
}

/** Snapshots kept parsed per worker process: a job's turns read the same one. */
const CACHED_SNAPSHOTS = 256;

export function createTurnPolicy(deps: TurnPolicyDeps) {
  const now = deps.now ?? Date.now;
  const snapshots = new Map<string, PolicySnapshot>();

  async function snapshotOf(ref: string): Promise<PolicySnapshot | undefined> {
    const cached = snapshots.get(ref);
    if (cached !== undefined) return cached;
    const text = await deps.contents.get(ref);
    if (text === undefined) return undefined;
    const snapshot = policySnapshotSchema.parse(JSON.parse(text));
    if (snapshots.size >= CACHED_SNAPSHOTS) {
      const oldest = snapshots.keys().next();
      if (oldest.done !== true) snapshots.delete(oldest.value);
    }
    snapshots.set(ref, snapshot);
    return snapshot;
  }

  return async function gateTurn(gate: TurnPolicyInput, answer: AssistantMessage): Promise<TurnPolicyResult> {
    try {
      const snapshot = await snapshotOf(gate.snapshotRef);
      if (snapshot === undefined) return { kind: 'unavailable', reason: 'the policy snapshot is not in the content store' };
      // The planner checks the seal; a snapshot it does not cover throws, and is unavailable below.
      const calls = answer.toolCalls.map((c) => preflight(c, gate.allowedTools, snapshot.detectors.roots));
      if (calls.length === 0) return { kind: 'unavailable', reason: 'no calls' };
      if (canonicalJson(calls).length > MAX_TURN_GATED_CHARS) return { kind: 'unavailable', reason: 'calls too large to carry twice' };
      const result = decideBatch(deps.sealer, {
        jobId: gate.jobId,
        scope: gate.scope,
        snapshot,
        policySeal: gate.policySeal,
        calls,
        memory: gate.memory,
        ruleCounters: gate.ruleCounters,
        now: now(),
      });
      const runs = result.plan?.outcome === 'run' ? result.plan.calls.flatMap((p) => (p.kind === 'run' ? [{ callId: p.call.callId, fingerprint: p.fingerprint, ...definitionClaim(snapshot.tools?.upstream, p.call.toolName) }] : [])) : [];
      if (runs.length === 0) return { kind: 'decided', calls, result };
      return { kind: 'decided', calls, result, grants: signGrants({ ...deps, now }, gate.jobId, runs) };
    } catch (err) {
      // The turn's answer matters more than this shortcut: the job asks the planner on its own.
      return { kind: 'unavailable', reason: describeError(err) };
    }
  };
}

export type TurnPolicy = ReturnType<typeof createTurnPolicy>;
