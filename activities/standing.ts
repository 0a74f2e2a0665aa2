import { type DecisionPayload, type PendingRequest } from '../core/approval/approvals';
import { deciderProblem } from '../core/approval/decision-check';
import { callFingerprint } from '../core/approval/fingerprint';
import {
  fixedArgs,
  requestScope,
  scopeDifference,
  standingId,
  standingRecordSchema,
  type StandingRecord,
  type StandingView,
} from '../core/approval/standing';
import { decisionPayloadSchema } from '../core/approval/approvals';
import type { JobScope } from '../core/policy/rules';
import { canonicalJson } from '../core/util/canonical-json';
import { getTool } from '../core/tools/registry';
import type { ReviewerKeys } from '../host/keys/reviewer-keys';
import { useKey, type StandingApprovals } from '../host/stores/standing-approvals/store';
import { verifySignedDecision } from './verify-decision';

export interface RecordStandingInput {
  readonly jobId: string;
  readonly scope: JobScope;
  /** The request as the job holds it, still pending: what the reviewer saw. */
  readonly request: PendingRequest;
  /** The verified decision that asks for it. */
  readonly payload: DecisionPayload;
}

export type RecordStandingResult =
  | { readonly ok: true; readonly id: string; readonly until: number; readonly uses: number }
  | { readonly ok: false; readonly reason: string };

export interface UseStandingInput {
  readonly jobId: string;
  readonly scope: JobScope;
  /** The request a person would otherwise be asked: its targets as the tools side observed them just now. */
  readonly request: PendingRequest;
}

export type UseStandingResult =
  | {
      readonly used: { readonly id: string; readonly reviewer: string; readonly use: number; readonly uses: number; readonly until: number };
      readonly declined: ReadonlyArray<{ readonly id: string; readonly why: string }>;
    }
  | { readonly used: null; readonly declined: ReadonlyArray<{ readonly id: string; readonly why: string }> };

export interface StandingDeps {
  readonly reviewerKeys: ReviewerKeys;
  /** Unset: no standing approval is kept or used (every call asks). */
  readonly standing?: StandingApprovals;
}

/**
 * Why a stored standing approval does not cover this call, checked from
 * scratch at every use: the record parses, the reviewer's signature over
 * the decision that made it verifies with the keys as they are now, the
 * signed fingerprint is that of the origin call the record names, the
 * record's scope is that call's, and the call now is the same operation;
 * the reviewer may still decide it under today's rules.
 */
async function whyNot(deps: StandingDeps, view: StandingView, input: UseStandingInput): Promise<string | undefined> {
  const parsed = standingRecordSchema.safeParse(view.record);
  if (!parsed.success) return 'its record does not parse';
  const record = parsed.data;
  const request = input.request;
  if (request.standing === undefined) return 'the rules gating this call allow no standing approval now';
  const payload = decisionPayloadSchema.safeParse(record.origin.payload);
  if (!payload.success) return 'its signed decision does not parse';
  const signed = payload.data;
  const standing = signed.standing;
  if (signed.decision !== 'approve' || standing === undefined || standing.until !== record.until || standing.uses !== record.uses) return 'its record is not what the reviewer signed';
  if (signed.reviewer !== record.reviewer || signed.requestId !== record.origin.requestId || signed.fingerprint !== record.origin.fingerprint) return 'its record is not what the reviewer signed';
  const origin = callFingerprint({
    jobId: record.origin.jobId,
    scope: { piece: record.scope.scope.piece ?? undefined, movement: record.scope.scope.movement ?? undefined },
    toolName: record.scope.toolName,
    normalizedArgs: record.origin.args,
    ruleId: record.origin.ruleId,
    ruleVersion: record.origin.ruleVersion,
  });
  if (origin !== record.origin.fingerprint) return 'its scope is not that of the call the reviewer signed';
  // The stored arguments are the signed call's, less only its free fields and the one file path its place stands for (as requestScope left them).
  const tool = getTool(record.scope.toolName);
  const target = record.scope.targets.length === 1 ? record.scope.targets[0] : undefined;
  const place = tool?.targetFields.length === 1 && target !== undefined && /^(?:[^:]+:)?file:/.test(target) ? tool.targetFields[0] : undefined;
  const expected = fixedArgs(record.origin.args, [...record.scope.varies, ...(place !== undefined ? [place] : [])]);
  if (canonicalJson(expected) !== canonicalJson(record.scope.args)) return 'its scope is not that of the call the reviewer signed';
  const now = requestScope(request, input.scope, request.standing);
  const differs = scopeDifference(record.scope, now);
  if (differs !== undefined) return differs;
  const decider = deciderProblem(request, record.reviewer);
  if (decider !== undefined) return decider.message;
  const verified = await verifySignedDecision(deps.reviewerKeys, undefined, { jobId: record.origin.jobId, payload: signed });
  if (!verified.valid) return verified.reason;
  return undefined;
}

export function createStandingActivities(deps: StandingDeps) {
  return {
    /** Keeps the standing approval a verified decision asked for; the same decision again finds the same record. */
    async recordStanding(input: RecordStandingInput): Promise<RecordStandingResult> {
      const { request, payload } = input;
      const ask = payload.standing;
      if (ask === undefined || request.standing === undefined) return { ok: false, reason: 'the decision asked for no standing approval the rules allow' };
      if (deps.standing === undefined) return { ok: false, reason: 'this agent worker keeps no standing approvals' };
      const record: StandingRecord = {
        schemaVersion: 1,
        id: standingId(input.jobId, request.requestId),
        reviewer: payload.reviewer,
        createdAt: Date.now(),
        until: ask.until,
        uses: ask.uses,
        scope: requestScope(request, input.scope, request.standing),
        origin: { jobId: input.jobId, requestId: request.requestId, fingerprint: request.fingerprint, args: request.args, ruleId: request.ruleId, ruleVersion: request.ruleVersion, payload },
      };
      await deps.standing.put(record);
      const kept = await deps.standing.get(record.id);
      if (kept === undefined) return { ok: false, reason: 'the standing approval was not kept' };
      return { ok: true, id: kept.record.id, until: kept.record.until, uses: kept.record.uses };
    },

    /**
     * Takes one use of a standing approval that covers this very call, or
     * says why none does. The use is keyed by job and request: a retried
     * attempt gets the same use, never a second one.
     */
    async useStanding(input: UseStandingInput): Promise<UseStandingResult> {
      const store = deps.standing;
      if (store === undefined) return { used: null, declined: [] };
      const now = Date.now();
      const declined: Array<{ id: string; why: string }> = [];
      for (const view of await store.candidates({ toolName: input.request.toolName, requester: input.request.requester, now })) {
        const why = await whyNot(deps, view, input);
        if (why !== undefined) {
          declined.push({ id: view.record.id, why });
          continue;
        }
        const taken = await store.use(view.record.id, useKey(input.jobId, input.request.requestId), now);
        if (!taken.ok) {
          declined.push({ id: view.record.id, why: taken.why.replace('_', ' ') });
          continue;
        }
        return { used: { id: view.record.id, reviewer: view.record.reviewer, use: taken.use, uses: view.record.uses, until: view.record.until }, declined };
      }
      return { used: null, declined };
    },

    /** Ends a standing approval whose decision the job did not apply after all (another decision came first). */
    async dropStanding(input: { readonly id: string; readonly reason: string }): Promise<void> {
      await deps.standing?.revoke(input.id, 'airlock', input.reason, Date.now());
    },
  };
}
