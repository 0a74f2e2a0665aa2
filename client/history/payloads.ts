import type { Client } from '@temporalio/client';
import { decodeFromPayloadsAtIndex } from '@temporalio/common/lib/internal-non-workflow';
import type { temporal } from '@temporalio/proto';
import { z } from 'zod';
import { decisionPayloadSchema, withdrawInputSchema, withdrawResultSchema } from '../../core/approval/approvals';
import { jobFactsSchema } from '../../core/job/job-facts';
import { policySnapshotSchema } from '../../core/policy/snapshot';
import { callFactsSchema } from '../../core/tools/facts';

/**
 * What a job's history holds, as the readers of this folder take it: how a
 * payload is decoded, when an event happened, and the shape of each payload
 * they look at. Loose wherever a newer build may add fields; a decision's
 * and a withdrawal's fields are the ones `core/approval` defines.
 */

export type HistoryEvent = temporal.api.history.v1.IHistoryEvent;
export type Payloads = temporal.api.common.v1.IPayloads | null | undefined;
/** The first value of a payload list, decoded as this installation's clients decode it. */
export type DecodePayloads = (payloads: temporal.api.common.v1.IPayload[]) => Promise<unknown>;

/** Decodes with the client's data converter (and its codec, when one is set). */
export function payloadDecoder(client: Client): DecodePayloads {
  return (payloads) => decodeFromPayloadsAtIndex(client.options.loadedDataConverter, 0, payloads);
}

/** When the event was recorded (workflow time), in ms; undefined when it carries no time. */
export function eventMs(event: HistoryEvent): number | undefined {
  const t = event.eventTime;
  if (t === null || t === undefined) return undefined;
  return Number(t.seconds ?? 0) * 1000 + Math.floor((t.nanos ?? 0) / 1e6);
}

const decision = decisionPayloadSchema.shape;
/** A decision as a reviewer sent it (signal or update), for telling what became of a request: the job judges the rest. */
export const sentDecisionSchema = z.looseObject({
  requestId: decision.requestId,
  decision: decision.decision,
  reviewer: decision.reviewer,
  reason: decision.reason,
  args: decision.args,
});
/** What a decision must match to settle its request: the request's fingerprint and nonce. */
export const decisionCheckSchema = z.looseObject({ requestId: decision.requestId, fingerprint: decision.fingerprint, nonce: decision.nonce, decision: decision.decision });
/** Who withdrew the job's waiting requests, and why (`withdrawRequests`'s input). */
export const withdrawalSchema = z.looseObject(withdrawInputSchema.shape);
/** What a withdrawal ended: its requests, and the calls whose requests end as they park. */
export const withdrawnSchema = z.looseObject(withdrawResultSchema.shape);
/** What `decide` answered: the request it settled, and how. */
export const decidedSchema = z.looseObject({ requestId: z.string(), status: z.enum(['approved', 'denied']) });

export const snapshotRootsSchema = z.looseObject({ snapshot: z.looseObject({ detectors: z.looseObject({ roots: z.array(z.string()) }) }) });
export const carriedRootsSchema = z.looseObject({ carried: snapshotRootsSchema });
export const loadedSnapshotSchema = z.looseObject({ snapshot: policySnapshotSchema });
export const carriedSnapshotSchema = z.looseObject({ carried: loadedSnapshotSchema });
export const markerDataSchema = z.looseObject({ activity_type: z.string() });
export const planResultSchema = z.looseObject({ plan: z.unknown() });
/** A model turn's result that brought the gate's decision on its calls (see `activities/turn-policy.ts`). */
export const gatedTurnSchema = z.looseObject({ gate: z.looseObject({ kind: z.literal('decided'), result: z.looseObject({ plan: z.unknown() }) }) });
export const preparedSchema = z.looseObject({ requestId: z.string(), nonce: z.string() });
export const factsResultSchema = z.looseObject({ facts: z.record(z.string(), callFactsSchema), prepared: z.record(z.string(), preparedSchema).optional() });

export const startInputSchema = z.object({ goal: z.string() });
export const executeInputSchema = z.object({ toolName: z.string(), args: z.unknown() });
export const executeResultSchema = z.object({ ok: z.boolean(), output: z.string().optional(), refused: z.string().optional() });
export const revalidateResultSchema = z.object({ ok: z.boolean(), reason: z.string().optional() });
export const jobResultSchema = z.object({
  schemaVersion: z.literal(1),
  status: z.enum(['completed', 'aborted', 'failed']),
  reason: z.enum(['policy_stopped', 'max_turns', 'model_error', 'state_too_large']).optional(),
  detail: z.string().optional(),
  summary: z.string().optional(),
  turns: z.number(),
  // Facts of a version this client does not read leave the rest of the result readable.
  facts: jobFactsSchema.optional().catch(undefined),
});
