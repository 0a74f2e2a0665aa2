import type { Client } from '@temporalio/client';
import { decodeOptionalSinglePayload } from '@temporalio/common/lib/internal-non-workflow';
import { temporal } from '@temporalio/proto';
import { type z } from 'zod';
import { PENDING_MEMO_KEY, pendingMemoSchema } from '../../core/reviewer/pending-memo';
import { callTarget, type JobEnd, type ProgressEvent } from '../../core/reviewer/progress';
import {
  eventMs,
  executeInputSchema,
  executeResultSchema,
  jobResultSchema,
  payloadDecoder,
  revalidateResultSchema,
  sentDecisionSchema,
  startInputSchema,
  withdrawalSchema,
  type DecodePayloads,
  type HistoryEvent,
  type Payloads,
} from './payloads';

/**
 * A job's progress as its history tells it: true wherever the workers run,
 * and needing no worker to answer. Parked requests come from the memo the
 * job publishes, decisions from their signals and updates, executions from
 * the `execute` activity, the end from the close event.
 */

const EventType = temporal.api.enums.v1.EventType;

interface Call {
  readonly activity: string;
  readonly toolName: string;
  readonly target: string;
}

/** Turns history events into progress events; keeps what it needs across events and runs. */
export class HistoryReader {
  private readonly pending = new Map<string, { toolName: string; expiresAt: number }>();
  /** The last decision sent for each request (a rejected one is replaced or never applied). */
  private readonly decisions = new Map<string, z.infer<typeof sentDecisionSchema>>();
  /** The operator's latest withdrawal: a request gone from the memo after it, with no decision of its own, was withdrawn. */
  private withdrawal: z.infer<typeof withdrawalSchema> | undefined;
  private readonly calls = new Map<string, Call>();

  private readonly decodePayloads: DecodePayloads;

  constructor(private readonly client: Client) {
    this.decodePayloads = payloadDecoder(client);
  }

  private async decode<T>(schema: z.ZodType<T>, payloads: Payloads): Promise<T | undefined> {
    try {
      const value = await this.decodePayloads(payloads?.payloads ?? []);
      const parsed = schema.safeParse(value);
      return parsed.success ? parsed.data : undefined;
    } catch {
      // A payload this client cannot decode (another codec key) shows as nothing rather than failing the watch.
      return undefined;
    }
  }

  /** What the event means to someone waiting, if anything; `next` is the run a continue-as-new hands over to. */
  async read(event: HistoryEvent): Promise<{ events: ProgressEvent[]; next?: string; end?: JobEnd }> {
    const none = { events: [] };
    switch (event.eventType) {
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED: {
        const a = event.workflowExecutionStartedEventAttributes;
        // A continued run is the same job going on.
        if (a === null || a === undefined || (a.continuedExecutionRunId ?? '') !== '') return none;
        const input = await this.decode(startInputSchema, a.input);
        return { events: [{ kind: 'started', goal: input?.goal ?? '' }] };
      }
      case EventType.EVENT_TYPE_WORKFLOW_PROPERTIES_MODIFIED: {
        const payload = event.workflowPropertiesModifiedEventAttributes?.upsertedMemo?.fields?.[PENDING_MEMO_KEY];
        if (payload === undefined) return none;
        let raw: unknown;
        try {
          raw = await decodeOptionalSinglePayload(this.client.options.loadedDataConverter, payload);
        } catch {
          return none;
        }
        const memo = pendingMemoSchema.safeParse(raw);
        return memo.success ? { events: this.pendingNow(memo.data.requests, eventMs(event)) } : none;
      }
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED: {
        const a = event.workflowExecutionSignaledEventAttributes;
        if (a?.signalName === 'approvalDecision') this.noteDecision(await this.decode(sentDecisionSchema, a.input));
        return none;
      }
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED: {
        const request = event.workflowExecutionUpdateAcceptedEventAttributes?.acceptedRequest?.input;
        if (request?.name === 'decide') this.noteDecision(await this.decode(sentDecisionSchema, request.args));
        if (request?.name === 'withdrawRequests') this.withdrawal = (await this.decode(withdrawalSchema, request.args)) ?? this.withdrawal;
        return none;
      }
      case EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED: {
        const a = event.activityTaskScheduledEventAttributes;
        const activity = a?.activityType?.name ?? '';
        if (activity !== 'execute' && activity !== 'revalidate') return none;
        const input = await this.decode(executeInputSchema, a?.input);
        if (input !== undefined) this.calls.set(String(event.eventId), { activity, toolName: input.toolName, target: callTarget(input.toolName, input.args) });
        return none;
      }
      case EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED: {
        const a = event.activityTaskCompletedEventAttributes;
        const call = this.takeCall(a?.scheduledEventId);
        if (call === undefined) return none;
        if (call.activity === 'revalidate') {
          const check = await this.decode(revalidateResultSchema, a?.result);
          return check === undefined || check.ok ? none : { events: [{ kind: 'refused', toolName: call.toolName, target: call.target, reason: check.reason ?? '' }] };
        }
        const result = await this.decode(executeResultSchema, a?.result);
        if (result === undefined) return none;
        if (result.refused !== undefined) return { events: [{ kind: 'refused', toolName: call.toolName, target: call.target, reason: result.refused }] };
        return { events: [{ kind: 'executed', toolName: call.toolName, target: call.target, ok: result.ok, detail: result.ok ? undefined : result.output }] };
      }
      case EventType.EVENT_TYPE_ACTIVITY_TASK_FAILED:
      case EventType.EVENT_TYPE_ACTIVITY_TASK_TIMED_OUT: {
        const a = event.activityTaskFailedEventAttributes ?? event.activityTaskTimedOutEventAttributes;
        const call = this.takeCall(a?.scheduledEventId);
        if (call === undefined || call.activity !== 'execute') return none;
        return { events: [{ kind: 'executed', toolName: call.toolName, target: call.target, ok: false, detail: a?.failure?.message ?? 'timed out' }] };
      }
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_COMPLETED: {
        const result = await this.decode(jobResultSchema, event.workflowExecutionCompletedEventAttributes?.result);
        const end: JobEnd = result === undefined ? { status: 'failed', message: 'the job ended with a result this client cannot read' } : { status: 'result', result };
        return { events: [{ kind: 'ended', end }], end };
      }
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_FAILED:
        return ended({ status: 'failed', message: event.workflowExecutionFailedEventAttributes?.failure?.message ?? '' });
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCELED:
        return ended({ status: 'cancelled' });
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TERMINATED:
        return ended({ status: 'terminated', reason: event.workflowExecutionTerminatedEventAttributes?.reason ?? '' });
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_TIMED_OUT:
        return ended({ status: 'timed_out' });
      case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW:
        return { events: [], next: event.workflowExecutionContinuedAsNewEventAttributes?.newExecutionRunId ?? undefined };
      default:
        return none;
    }
  }

  private noteDecision(decision: z.infer<typeof sentDecisionSchema> | undefined): void {
    if (decision !== undefined) this.decisions.set(decision.requestId, decision);
  }

  private takeCall(scheduledEventId: Long | number | null | undefined): Call | undefined {
    const key = String(scheduledEventId ?? '');
    const call = this.calls.get(key);
    this.calls.delete(key);
    return call;
  }

  /**
   * The memo lists what waits now: new requests parked; a request gone
   * before its expiry was decided (by the last decision sent for it: the
   * job applies no other), one gone at or after its expiry expired, even
   * when a decision was sent (the job rejected it, or it came too late).
   */
  private pendingNow(requests: z.infer<typeof pendingMemoSchema>['requests'], at: number | undefined): ProgressEvent[] {
    const out: ProgressEvent[] = [];
    const now = new Set(requests.map((r) => r.requestId));
    for (const [requestId, { toolName, expiresAt }] of this.pending) {
      if (now.has(requestId)) continue;
      this.pending.delete(requestId);
      const d = this.decisions.get(requestId);
      const w = this.withdrawal;
      if (d === undefined && w !== undefined) {
        out.push({ kind: 'withdrawn', requestId, toolName, by: w.by, reason: w.reason });
        continue;
      }
      const expired = d === undefined || (at !== undefined && at >= expiresAt);
      out.push(
        expired
          ? { kind: 'expired', requestId, toolName }
          : { kind: 'decided', requestId, toolName, decision: d.decision, reviewer: d.reviewer, edited: d.args !== undefined, reason: d.reason },
      );
    }
    for (const r of requests) {
      if (this.pending.has(r.requestId)) continue;
      this.pending.set(r.requestId, { toolName: r.toolName, expiresAt: Date.parse(r.expiresAt) });
      out.push({ kind: 'parked', requestId: r.requestId, toolName: r.toolName, target: callTarget(r.toolName, r.args), ruleId: r.ruleId, reason: r.reason });
    }
    return out;
  }
}

/** A protobuf int64 (history event ids). */
type Long = { toString(): string };

function ended(end: JobEnd): { events: ProgressEvent[]; end: JobEnd } {
  return { events: [{ kind: 'ended', end }], end };
}
