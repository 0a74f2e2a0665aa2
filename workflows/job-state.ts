import { slimmed, type ApprovalRequest, type PendingRequest } from '../core/approval/approvals';
import type { BatchPlan, JobPolicyMemory } from '../core/job/plan-schema';
import type { CallOutcome, CarriedState, ParkedBatch, ReconciledCall } from '../core/job/carried-state';
import type { AssistantMessage, ChatMessage } from '../core/model/chat';
import { afterModelTurn, judgeContext } from '../core/job/conversation';
import { isPending } from '../core/job/job-view';
import { recordFires } from '../core/policy/rule-fires';
import type { PolicySnapshot } from '../core/policy/snapshot';
import { useUpstreamTools } from '../core/tools/registry';
import { Texts } from '../core/job/texts';
import { withClientCall, type ClientCall } from '../core/job/client-calls';
import { canonicalJson } from '../core/util/canonical-json';
import { sha256Hex } from '../core/util/sha256';

const MAX_DECIDED_KEPT = 50;

/**
 * The job's durable state (what continue-as-new carries) and every change
 * made to it: the conversation, counters, per-job policy memory and the
 * parked batch. Nothing else writes `CarriedState`.
 */
export class JobState {
  /**
   * Whether each answer added since the last `takeToolResults` reports a
   * failure (a denial, a refusal, a tool error): what a client is told as
   * `isError`. In memory only: a client-driven job takes its answers in
   * the same workflow task that adds them.
   */
  private readonly failedAnswers = new Set<string>();
  /** The snapshot's digest, computed once per run (it never changes within one). */
  private snapshotDigest: string | undefined;

  constructor(
    private data: CarriedState,
    private readonly maxApprovalRequests: number,
  ) {
    // This run looks up the upstream MCP tools its snapshot froze, on every replay alike.
    useUpstreamTools(data.snapshot.tools?.upstream ?? []);
  }

  get snapshot(): PolicySnapshot {
    return this.data.snapshot;
  }

  /** SHA-256 of the snapshot's canonical JSON: the digest its seal covers, and its key in the content store. */
  get snapshotRef(): string {
    this.snapshotDigest ??= sha256Hex(canonicalJson(this.data.snapshot));
    return this.snapshotDigest;
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

  /** What the next model turn needs: the stored conversation's head and what came after it. */
  modelInput(): { readonly head: string | null; readonly messages: readonly ChatMessage[] } {
    return { head: this.data.conversation.head, messages: this.data.conversation.pending };
  }

  /** The last few messages, masked, for the judge. */
  judgeContext(): string[] {
    return judgeContext(this.data.conversation);
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

  /** The model's answer; `head` is the conversation stored with it (absent in turns recorded before the store). */
  addAssistant(message: AssistantMessage, head: string | undefined): void {
    this.data.conversation = afterModelTurn(this.data.conversation, message, head);
  }

  nudge(): void {
    this.push({ role: 'user', content: Texts.nudge });
  }

  /** Appends a call's result (`failed`: it did not run, or the tool said it failed); returns its place so a result decided later keeps the call order. */
  addToolResult(callId: string, content: string, failed = false): number {
    if (failed) this.failedAnswers.add(callId);
    return this.push({ role: 'tool', toolCallId: callId, content });
  }

  fillToolResult(slot: number, callId: string, content: string, failed = false): void {
    if (failed) this.failedAnswers.add(callId);
    this.data.conversation.pending[slot] = { role: 'tool', toolCallId: callId, content };
  }

  /**
   * A client-driven job's answers: every tool result since the last call,
   * and what the gate said besides (a rule's instructions), taken out of
   * the conversation — no model turn will read them.
   */
  takeAnswers(): { readonly answers: Array<{ readonly callId: string; readonly text: string; readonly failed: boolean }>; readonly notes: string[] } {
    const { pending } = this.data.conversation;
    const answers = pending.flatMap((m) => (m.role === 'tool' ? [{ callId: m.toolCallId, text: m.content, failed: this.failedAnswers.has(m.toolCallId) }] : []));
    const notes = pending.flatMap((m) => (m.role === 'user' && typeof m.content === 'string' ? [m.content] : []));
    this.data.conversation.length -= pending.length;
    this.data.conversation.pending = [];
    this.failedAnswers.clear();
    return { answers, notes };
  }

  // ---- a client's calls -----------------------------------------------------

  clientCalls(): readonly ClientCall[] {
    return this.data.clientCalls ?? [];
  }

  clientCall(callKey: string): ClientCall | undefined {
    return this.data.clientCalls?.find((c) => c.callKey === callKey);
  }

  setClientCall(call: ClientCall): void {
    this.data.clientCalls = withClientCall(this.data.clientCalls ?? [], call);
  }

  /** The one injected user message after a batch's tool results; false when there is nothing to say. */
  addInstructions(instructions: readonly string[]): boolean {
    if (instructions.length === 0) return false;
    this.push({ role: 'user', content: Texts.instructions(instructions) });
    return true;
  }

  /** Messages wait in the conversation's pending part until the next model turn stores them. */
  private push(message: ChatMessage): number {
    this.data.conversation.length++;
    return this.data.conversation.pending.push(message) - 1;
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

  /** A call settled from its target after an attempt died: kept for `airlock show`. */
  noteReconciled(call: ReconciledCall): void {
    this.data.reconciled = [...(this.data.reconciled ?? []), call].slice(-MAX_DECIDED_KEPT);
  }

  /** What became of an approved call: kept for `airlock show`, so a failed one is never reported as executed. */
  noteOutcome(outcome: CallOutcome): void {
    this.data.outcomes = [...(this.data.outcomes ?? []), { ...outcome, detail: outcome.detail.slice(0, 500) }].slice(-MAX_DECIDED_KEPT);
  }

  /** The approved calls' outcomes noted so far (the last 50). */
  outcomes(): readonly CallOutcome[] {
    return this.data.outcomes ?? [];
  }

  executed(): number {
    return this.data.toolCallsExecuted;
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

  /** The parked batch's requests, then those of earlier batches (the last kept): what a decision can name. */
  knownRequests(): readonly ApprovalRequest[] {
    return [...this.requests(), ...this.data.decided];
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
    this.data.decided = [...this.data.decided, ...this.requests().map(slimmed)].slice(-MAX_DECIDED_KEPT);
    this.data.parked = null;
  }
}
