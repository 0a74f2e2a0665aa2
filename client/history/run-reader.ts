import type { z } from 'zod';
import { approvalRules } from '../../core/job/batch-plan';
import { type BatchPlan } from '../../core/job/plan-schema';
import { mergeApprovalSettings } from '../../core/policy/approval-settings';
import type { CallFacts } from '../../core/tools/facts';
import { toolPlanOf } from '../../core/job/rehearsal';
import type { CallRecord, Driver, JobReading } from './job-reading';
import {
  decidedSchema,
  decisionCheckSchema,
  eventMs,
  factsResultSchema,
  gatedTurnSchema,
  loadedSnapshotSchema,
  markerDataSchema,
  planResultSchema,
  preparedSchema,
  snapshotRootsSchema,
  withdrawnSchema,
  type DecodePayloads,
  type HistoryEvent,
  type Payloads,
} from './payloads';
import { happenedOfPlan, recordedPlan } from './recorded-plan';
import { SubmittedCalls } from './submitted-calls';

/**
 * Reads the tool calls of past jobs from their Temporal histories: the
 * calls exactly as the gate evaluated them (the plan of each fresh batch:
 * brought by its model turn, or the `evaluatePolicy` result), the targets' facts the tools side resolved for it,
 * and what became of each call (the plan, then the reviewer's decisions
 * by update or signal, and whether the job moved on without one). A
 * model's batch is a model turn's calls; a client-driven job's is each
 * call a `submitCall` update brought (see `SubmittedCalls`).
 */
export class RunReader {
  private readonly activities = new Map<string, string>();
  /** Each `prepareApproval` by its scheduled event: the call, and when it was parked (a request's lifetime counts from then). */
  private readonly prepares = new Map<string, { readonly record: CallRecord; readonly parkedAt: number }>();
  /** Accepted updates that settle requests, by protocol instance: a decision, or a withdrawal. */
  private readonly updates = new Map<string, 'decide' | 'withdraw'>();
  /** Calls of a client-driven job withdrawn before they parked: a request they park later is withdrawn at once. */
  private readonly withdrawnCalls = new Set<string>();
  /** Gated calls of the last fresh batch, in plan order, waiting for their `prepareApproval`. */
  private awaitingPrepare: CallRecord[] = [];
  private batchOpen = false;
  /** Workflow time of the task that last started: a job's clock (`Date.now()` in workflow code) reads it. */
  private taskStartedAt = 0;
  /** Workflow time when the open batch was first evaluated: its `now` for cooldowns. */
  private batchAt: number | undefined;
  private facts: Record<string, CallFacts> | undefined;
  /** Approvals prepared with the open batch's facts, by call id: such a call parks without a `prepareApproval`. */
  private preparedWithFacts: Record<string, z.infer<typeof preparedSchema>> = {};
  /** A plan the last model turn decided, taken at the next workflow task. */
  private gatedPlan: BatchPlan | undefined;
  private readonly submitted: SubmittedCalls;

  constructor(
    private readonly decodePayloads: DecodePayloads,
    private readonly runId: string,
    private readonly job: JobReading,
    private readonly driver: Driver,
  ) {
    this.submitted = new SubmittedCalls(job.clientCalls);
  }

  /** Whether the gate may be deciding fresh calls: after a model turn; in a client-driven job at any time, one call after another. */
  private evaluating(): boolean {
    return this.driver === 'client' || this.batchOpen;
  }

  /** Whether this call (by id) waits for a reviewer. */
  private parked(callId: string): boolean {
    return [...this.job.requests.values()].some((o) => o.record.happened === 'pending' && o.record.call.callId === callId);
  }

  private async decode(payloads: Payloads): Promise<unknown> {
    return this.decodePayloads(payloads?.payloads ?? []);
  }

  /** Requests still open when the job went on: the job only goes on once each is decided or expired. */
  private expireOpen(): void {
    for (const open of this.job.requests.values()) if (open.record.happened === 'pending') open.record.happened = 'expired';
    this.job.requests.clear();
  }

  /**
   * A client-driven job's requests whose time is up: the job settles them
   * expired at the first task that starts after (its timer's, or a new
   * call's), before anything else; a decision from then on is refused. A
   * model's job needs no clock here: it goes on only once each is settled.
   */
  private expireDue(): void {
    for (const [id, open] of this.job.requests) {
      if (open.expiresAt === undefined || open.expiresAt > this.taskStartedAt || open.record.happened !== 'pending') continue;
      open.record.happened = 'expired';
      this.job.requests.delete(id);
    }
  }

  private settle(requestId: string, status: 'approved' | 'denied', check?: { fingerprint: string; nonce: string }): void {
    const open = this.job.requests.get(requestId);
    if (open === undefined || open.record.happened !== 'pending') return;
    if (check !== undefined && (check.fingerprint !== open.record.fingerprint || check.nonce !== open.nonce)) return;
    open.record.happened = status === 'approved' ? 'approved' : 'denied by reviewer';
  }

  /** An operator's withdrawal: the requests it ended, and the calls whose requests end as soon as they park. */
  private withdraw(result: z.infer<typeof withdrawnSchema>): void {
    for (const id of result.withdrawn) {
      const open = this.job.requests.get(id);
      if (open !== undefined && open.record.happened === 'pending') open.record.happened = 'withdrawn';
    }
    for (const key of result.calls ?? []) this.withdrawnCalls.add(key);
  }

  async read(events: readonly HistoryEvent[]): Promise<void> {
    for (const event of events) await this.apply(event);
  }

  private async apply(event: HistoryEvent): Promise<void> {
    const id = String(event.eventId ?? '');
    if (event.workflowTaskStartedEventAttributes != null) {
      this.taskStartedAt = eventMs(event) ?? 0;
      if (this.driver === 'client') this.expireDue();
      const gated = this.gatedPlan;
      this.gatedPlan = undefined;
      // Decided by the model turn: the job took its plan in this task, where it would have asked `evaluatePolicy`.
      if (gated !== undefined && this.batchOpen) this.planned(gated);
      return;
    }
    if (event.activityTaskScheduledEventAttributes != null) {
      const type = event.activityTaskScheduledEventAttributes.activityType?.name ?? '';
      this.activities.set(id, type);
      if (type === 'modelTurn') this.expireOpen();
      if (type === 'prepareApproval') {
        const next = this.awaitingPrepare.shift();
        if (next !== undefined) this.prepares.set(id, { record: next, parkedAt: this.taskStartedAt });
      }
      return;
    }
    const completed = event.activityTaskCompletedEventAttributes;
    if (completed != null) {
      const scheduled = String(completed.scheduledEventId ?? '');
      const type = this.activities.get(scheduled);
      if (type === 'modelTurn') {
        this.batchOpen = true;
        this.batchAt = undefined;
        this.facts = undefined;
        this.preparedWithFacts = {};
        // A turn that decided its calls (its plan; one that asked for facts or the judge first leaves the batch open).
        const turn = gatedTurnSchema.safeParse(await this.decode(completed.result));
        this.gatedPlan = turn.success ? recordedPlan(turn.data.gate.result.plan) : undefined;
      } else if (type === 'resolveTargets' && this.evaluating()) {
        const parsed = factsResultSchema.safeParse(await this.decode(completed.result));
        this.facts = parsed.success ? parsed.data.facts : undefined;
        this.preparedWithFacts = parsed.success ? (parsed.data.prepared ?? {}) : {};
      } else if (type === 'prepareApproval') {
        const prepared = this.prepares.get(scheduled);
        const parsed = preparedSchema.safeParse(await this.decode(completed.result));
        if (prepared !== undefined && parsed.success) {
          const { record, parkedAt } = prepared;
          this.requested(record, parsed.data, parkedAt);
        }
      }
      return;
    }
    const marker = event.markerRecordedEventAttributes;
    if (marker != null && marker.markerName === 'core_local_activity') {
      const data = markerDataSchema.safeParse(await this.decode(marker.details?.data));
      if (data.success && data.data.activity_type === 'loadPolicySnapshot') {
        const result = await this.decode(marker.details?.result);
        const loaded = snapshotRootsSchema.safeParse(result);
        if (loaded.success) this.job.roots ??= loaded.data.snapshot.detectors.roots;
        const snapshot = loadedSnapshotSchema.safeParse(result);
        if (snapshot.success) this.job.snapshot ??= snapshot.data.snapshot;
        return;
      }
      if (!data.success || data.data.activity_type !== 'evaluatePolicy' || !this.evaluating()) return;
      this.batchAt ??= this.taskStartedAt;
      const result = planResultSchema.safeParse(await this.decode(marker.details?.result));
      // A pass that asked for facts or the judge first carries no plan; the batch stays open for the next pass.
      const plan = result.success ? recordedPlan(result.data.plan) : undefined;
      if (plan !== undefined) this.planned(plan);
      return;
    }
    const signal = event.workflowExecutionSignaledEventAttributes;
    if (signal != null && signal.signalName === 'approvalDecision') {
      const payload = decisionCheckSchema.safeParse(await this.decode(signal.input));
      if (payload.success) this.settle(payload.data.requestId, payload.data.decision === 'approve' ? 'approved' : 'denied', payload.data);
      return;
    }
    const accepted = event.workflowExecutionUpdateAcceptedEventAttributes;
    if (accepted != null && (accepted.acceptedRequest?.input?.name === 'decide' || accepted.acceptedRequest?.input?.name === 'withdrawRequests')) {
      this.updates.set(accepted.protocolInstanceId ?? '', accepted.acceptedRequest.input.name === 'decide' ? 'decide' : 'withdraw');
      return;
    }
    // Only accepted calls are in history: the validator's refusals never reach it.
    if (accepted != null && accepted.acceptedRequest?.input?.name === 'submitCall' && this.driver === 'client') {
      this.submitted.accept(await this.decode(accepted.acceptedRequest.input.args), (key) => this.parked(key));
      return;
    }
    const done = event.workflowExecutionUpdateCompletedEventAttributes;
    const kind = done == null ? undefined : this.updates.get(done.meta?.updateId ?? '');
    if (done != null && kind !== undefined && done.outcome?.success != null) {
      const outcome = await this.decode(done.outcome.success);
      if (kind === 'withdraw') {
        const result = withdrawnSchema.safeParse(outcome);
        if (result.success) this.withdraw(result.data);
        return;
      }
      const result = decidedSchema.safeParse(outcome);
      if (result.success) this.settle(result.data.requestId, result.data.status);
      return;
    }
    if (event.workflowExecutionCompletedEventAttributes != null) this.expireOpen();
    else if (
      event.workflowExecutionTerminatedEventAttributes != null ||
      event.workflowExecutionCanceledEventAttributes != null ||
      event.workflowExecutionFailedEventAttributes != null ||
      event.workflowExecutionTimedOutEventAttributes != null
    ) {
      for (const open of this.job.requests.values()) if (open.record.happened === 'pending') open.record.happened = 'undecided';
      this.job.requests.clear();
    }
  }

  /** The plan of the open batch: its calls and what the gate made of them. */
  private planned(plan: BatchPlan): void {
    this.batchAt ??= this.taskStartedAt;
    this.batchOpen = false;
    if (this.driver === 'model') this.freshBatch(plan, this.batchAt, true);
    else this.clientBatch(plan, this.batchAt);
    this.batchAt = undefined;
    this.facts = undefined;
  }

  /**
   * A client's call as the gate took it. While another call waits for a
   * reviewer, one that needs approval too is answered at once and never
   * becomes a request; a plan of calls taken before (a reviewer's edit
   * evaluated again) is no fresh batch.
   */
  private clientBatch(plan: BatchPlan, at: number): void {
    const took = this.submitted.take(plan.calls.map((p) => p.call.callId));
    if (took.size === 0) return;
    const waiting = [...this.job.requests.values()].some((o) => o.record.happened === 'pending');
    this.freshBatch({ ...plan, calls: plan.calls.filter((p) => took.has(p.call.callId)) }, at, !waiting);
  }

  /** A gated call became a request, parked at `parkedAt` (a request's lifetime counts from then). */
  private requested(record: CallRecord, prepared: z.infer<typeof preparedSchema>, parkedAt: number): void {
    // Withdrawn while it was being looked at: the job withdraws the request as it parks.
    record.happened = this.withdrawnCalls.delete(record.call.callId) ? 'withdrawn' : 'pending';
    const expiresAt = record.ttlMs === undefined ? undefined : parkedAt + record.ttlMs;
    this.job.requests.set(prepared.requestId, { record, nonce: prepared.nonce, expiresAt });
  }

  /** `parks`: whether its gated calls become requests (each prepared with its facts, or paired with the next `prepareApproval`). */
  private freshBatch(plan: BatchPlan, at: number, parks: boolean): void {
    const calls: CallRecord[] = [];
    this.awaitingPrepare = [];
    for (const planned of plan.calls) {
      const p = toolPlanOf(planned);
      if (p === undefined) continue;
      const record: CallRecord = {
        call: p.call,
        planned: p.kind,
        ruleId: p.kind === 'run' ? null : p.ruleId,
        happened: happenedOfPlan(p.kind),
        facts: this.facts?.[p.call.callId],
      };
      if (p.kind === 'approval') {
        record.fingerprint = p.fingerprint;
        const snapshot = this.job.snapshot;
        if (this.driver === 'client' && snapshot !== undefined) record.ttlMs = mergeApprovalSettings(approvalRules(snapshot, p.evaluation)).ttlMs;
        const ready = this.preparedWithFacts[p.call.callId];
        if (parks && ready !== undefined) this.requested(record, ready, this.taskStartedAt);
        else if (parks) this.awaitingPrepare.push(record);
      }
      calls.push(record);
    }
    this.facts = undefined;
    this.preparedWithFacts = {};
    if (calls.length > 0) this.job.batches.push({ runId: this.runId, at, calls });
  }
}
