import type { ApprovalRequest, PendingRequest } from '../core/approvals';
import type { BatchPlan, JobPolicyMemory } from '../core/batch-plan';
import type { CarriedState, ParkedBatch } from '../core/carried-state';
import type { AssistantMessage } from '../core/chat';
import { isPending } from '../core/job-view';
import { recordFires } from '../core/policy/evaluate';
import type { PolicySnapshot } from '../core/policy/snapshot';
import { Texts } from '../core/texts';

const MAX_DECIDED_KEPT = 50;

/**
 * The job's durable state (what continue-as-new carries) and every change
 * made to it: the conversation, counters, per-job policy memory and the
 * parked batch. Nothing else writes `CarriedState`.
 */
export class JobState {
  constructor(
    private data: CarriedState,
    private readonly maxApprovalRequests: number,
  ) {}

  get snapshot(): PolicySnapshot {
    return this.data.snapshot;
  }

  /** The agent worker's seal over the snapshot; absent only in state from builds before seals. */
  get policySeal(): string | undefined {
    return this.data.policySeal;
  }

  sealPolicy(seal: string): void {
    this.data.policySeal = seal;
  }

  get turns(): number {
    return this.data.turns;
  }

  get parked(): ParkedBatch | null {
    return this.data.parked;
  }

  get messages(): CarriedState['messages'] {
    return this.data.messages;
  }

  /** A copy for continue-as-new. */
  carried(): CarriedState {
    return { ...this.data, continuedAsNew: this.data.continuedAsNew + 1 };
  }

  /** The state as it is, for the query view. */
  current(): CarriedState {
    return this.data;
  }

  memory(): JobPolicyMemory {
    return {
      deniedFingerprints: this.data.deniedFingerprints,
      redirectedFingerprints: this.data.redirectedFingerprints,
      approvalRequests: this.data.approvalRequests,
      maxApprovalRequests: this.maxApprovalRequests,
      completionRuleFires: this.data.completionRuleFires,
    };
  }

  // ---- the conversation ---------------------------------------------------

  startTurn(): void {
    this.data.turns++;
  }

  addAssistant(message: AssistantMessage): void {
    this.data.messages.push(message);
  }

  nudge(): void {
    this.data.messages.push({ role: 'user', content: Texts.nudge });
  }

  /** Appends a call's result; returns its place so a result decided later keeps the call order. */
  addToolResult(callId: string, content: string): number {
    return this.data.messages.push({ role: 'tool', toolCallId: callId, content }) - 1;
  }

  fillToolResult(slot: number, callId: string, content: string): void {
    this.data.messages[slot] = { role: 'tool', toolCallId: callId, content };
  }

  /** The one injected user message after a batch's tool results; false when there is nothing to say. */
  addInstructions(instructions: readonly string[]): boolean {
    if (instructions.length === 0) return false;
    this.data.messages.push({ role: 'user', content: Texts.instructions(instructions) });
    return true;
  }

  // ---- policy memory ------------------------------------------------------

  /** Fire counters and completion rejections of a plan that is acted on. */
  recordPlan(plan: BatchPlan, now: number): void {
    this.data.ruleCounters = recordFires(this.data.ruleCounters, plan.fires, now);
    for (const ruleId of plan.completionRejections) {
      if (!this.data.completionRuleFires.includes(ruleId)) this.data.completionRuleFires.push(ruleId);
    }
  }

  get ruleCounters(): CarriedState['ruleCounters'] {
    return this.data.ruleCounters;
  }

  /** The same redirect on the same call twice becomes a deny. */
  rememberRedirects(plan: BatchPlan): void {
    for (const p of plan.calls) {
      if (p.kind === 'redirect' && !this.data.redirectedFingerprints.includes(p.fingerprint)) this.data.redirectedFingerprints.push(p.fingerprint);
    }
  }

  /** A denied (or expired) call is never requested again in this job. */
  rememberDenied(fingerprint: string): void {
    if (!this.data.deniedFingerprints.includes(fingerprint)) this.data.deniedFingerprints.push(fingerprint);
  }

  countExecuted(): void {
    this.data.toolCallsExecuted++;
  }

  countRejectedDecision(): void {
    this.data.rejectedDecisions++;
  }

  // ---- the parked batch ---------------------------------------------------

  park(batch: ParkedBatch): void {
    this.data.approvalRequests += batch.requests.length;
    this.data.parked = batch;
  }

  requests(): readonly ApprovalRequest[] {
    return this.data.parked?.requests ?? [];
  }

  pendingRequests(): PendingRequest[] {
    return this.requests().filter(isPending);
  }

  /** Replaces a parked request by its decided (or expired) self. */
  settle(request: ApprovalRequest): void {
    const parked = this.data.parked;
    if (parked === null) return;
    parked.requests = parked.requests.map((r) => (r.requestId === request.requestId ? request : r));
  }

  closeParked(): void {
    this.data.decided = [...this.data.decided, ...this.requests()].slice(-MAX_DECIDED_KEPT);
    this.data.parked = null;
  }
}
