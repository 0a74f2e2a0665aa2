import {
  ActivityFailure,
  ApplicationFailure,
  allHandlersFinished,
  condition,
  continueAsNew,
  proxyActivities,
  proxyLocalActivities,
  setCurrentDetails,
  setHandler,
  upsertSearchAttributes,
  workflowInfo,
} from '@temporalio/workflow';
import type { AgentActivities, JudgeActivities, ToolActivities } from '../activities';
import type { JudgeRequest } from '../activities/policy';
import type { Grant } from '../core/grants';
import { checkDecision, mismatchCodes, type ApprovalRequest, type DecisionCheck } from '../core/approvals';
import { summarizeArgs, type AuditEvent, type AuditEventType } from '../core/audit';
import {
  instructionMessage,
  planBatch,
  preflight,
  type BatchPlan,
  type PlannedCall,
  type PreflightedCall,
  type ToolPreflight,
} from '../core/batch';
import { withUniqueCallIds, type ChatMessage } from '../core/chat';
import { FailureTypes } from '../core/failure-types';
import {
  agentJobInputSchema,
  allowedToolsFor,
  carriedStateSchema,
  decidedView,
  pendingCard,
  pendingView,
  type AgentJobInput,
  type AgentJobResult,
  type AgentJobStateView,
  type CarriedState,
  type JobOutcome,
  type ParsedAgentJobInput,
} from '../core/job';
import { recentTurnsForJudge } from '../core/judge';
import { evaluateCall, recordFires, ruleById, type JudgeVerdict, type RuleMatch } from '../core/policy/evaluate';
import { mergeApprovalSettings } from '../core/policy/approval-settings';
import type { Rule } from '../core/policy/rules';
import type { PolicySnapshot } from '../core/policy/snapshot';
import { pendingToolsKey, statusKey, type JobStatus } from '../core/search-attributes';
import { TaskQueues } from '../core/task-queues';
import { Texts } from '../core/texts';
import { COMPLETE_TOOL, getTool } from '../core/tools/definitions';
import { approvalDecisionSignal, decideUpdate, decisionRejectedSignal, stateQuery, type DecideResult } from './messages';


const MAX_DECIDED_KEPT = 50;
const GRANT_ATTEMPTS = 3;

const model = proxyActivities<AgentActivities>({
  taskQueue: TaskQueues.agent,
  startToCloseTimeout: '3 minutes',
  retry: { initialInterval: '2 seconds', maximumAttempts: 5 },
});

// Fast, deterministic-cost work on the agent worker: recorded as markers, not as scheduled tasks.
const local = proxyLocalActivities<AgentActivities>({
  startToCloseTimeout: '30 seconds',
  retry: { initialInterval: '1 second', maximumAttempts: 5 },
});

// prepare and revalidate only observe; calls add a summary for the Web UI on top of these.
const toolOptions = {
  taskQueue: TaskQueues.tools,
  startToCloseTimeout: '2 minutes',
  retry: { initialInterval: '2 seconds', maximumAttempts: 5 },
} as const;

const tools = proxyActivities<ToolActivities>(toolOptions);

const judgeQueue = proxyActivities<JudgeActivities>({
  taskQueue: TaskQueues.judge,
  startToCloseTimeout: '30 seconds',
  retry: { maximumAttempts: 1 },
});

/** The job: model turns, a policy gate before every side effect, durable approvals, execute once. */
export async function agentJob(rawInput: AgentJobInput): Promise<AgentJobResult> {
  const parsed = agentJobInputSchema.safeParse(rawInput);
  if (!parsed.success) {
    throw ApplicationFailure.nonRetryable(
      `invalid agentJob input: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(input)'}: ${i.message}`).join('; ')}`,
      FailureTypes.InvalidInput,
    );
  }
  let carried: CarriedState | undefined;
  if (parsed.data.carried !== undefined) {
    const restored = carriedStateSchema.safeParse(parsed.data.carried);
    if (!restored.success) {
      throw ApplicationFailure.nonRetryable(
        `cannot restore the job's carried state: ${restored.error.issues[0]?.path.join('.') ?? ''}: ${restored.error.issues[0]?.message ?? ''}`,
        FailureTypes.InvalidInput,
      );
    }
    carried = restored.data;
  }
  return new Job(parsed.data, carried).run();
}

class Job {
  private readonly jobId = workflowInfo().workflowId;
  private readonly allowedTools: string[];
  private state!: CarriedState;
  private status: JobStatus = 'running';
  private result: AgentJobResult | null = null;
  private auditBuffer: AuditEvent[] = [];
  private shownStatus: JobStatus | undefined;
  private shownPending = '';

  constructor(
    private readonly input: ParsedAgentJobInput,
    restored: CarriedState | undefined,
  ) {
    this.allowedTools = allowedToolsFor(input);
    // State before handlers: signals and updates buffered across continue-as-new are delivered on registration.
    if (restored !== undefined) this.state = restored;
    setHandler(stateQuery, () => this.view());
    setHandler(approvalDecisionSignal, async (payload) => {
      await this.applyDecision(payload, 'signal');
    });
    setHandler(decisionRejectedSignal, (payload) => {
      this.auditReportedRejection(payload);
    });
    setHandler(
      decideUpdate,
      async (payload): Promise<DecideResult> => {
        const check = await this.applyDecision(payload, 'update');
        // Rejected here, the update is in history and already audited: `handler` tells the client not to report it.
        if (!check.ok) throw ApplicationFailure.create({ message: check.message, type: FailureTypes.DecisionRejected, details: [check.code, 'handler'] });
        return {
          requestId: check.request.requestId,
          status: check.payload.decision === 'approve' ? 'approved' : 'denied',
          editedFingerprint: check.edit?.fingerprint ?? null,
        };
      },
      {
        validator: (payload) => {
          const check = this.checkDecision(payload);
          if (!check.ok) {
            throw ApplicationFailure.create({ message: check.message, type: FailureTypes.DecisionRejected, details: [check.code, 'validator'] });
          }
        },
      },
    );
  }

  async run(): Promise<AgentJobResult> {
    this.state ??= await this.freshState();
    if (this.state.parked !== null) this.status = 'awaiting_approval';
    for (;;) {
      if (this.state.parked !== null) {
        if ((await this.awaitDecisions()) === 'continue_as_new') return this.continueAsNew();
        const ended = await this.finishParkedBatch();
        if (ended !== undefined) return ended;
        continue;
      }
      if (this.shouldContinueAsNew()) return this.continueAsNew();
      if (this.state.turns >= this.input.maxTurns) {
        return this.finish('failed', { reason: 'max_turns', detail: `no completion within ${this.input.maxTurns} turns` });
      }
      const ended = await this.turn();
      if (ended !== undefined) return ended;
    }
  }

  // ---- setup and state ---------------------------------------------------

  private async freshState(): Promise<CarriedState> {
    let snapshot: PolicySnapshot;
    try {
      snapshot = (await local.loadPolicySnapshot()).snapshot;
    } catch (err) {
      throw ApplicationFailure.nonRetryable(`cannot load the policy snapshot: ${failureMessage(err)}`, FailureTypes.PolicyUnavailable);
    }
    return {
      schemaVersion: 1,
      snapshot,
      messages: [
        { role: 'system', content: systemPrompt(this.jobId, snapshot, this.allowedTools) },
        { role: 'user', content: this.input.goal },
      ],
      turns: 0,
      ruleCounters: {},
      deniedFingerprints: [],
      redirectedFingerprints: [],
      completionRuleFires: [],
      approvalRequests: 0,
      toolCallsExecuted: 0,
      rejectedDecisions: 0,
      parked: null,
      decided: [],
      continuedAsNew: 0,
    };
  }

  private view(): AgentJobStateView {
    const requests = this.state?.parked?.requests ?? [];
    return {
      schemaVersion: 1,
      jobId: this.jobId,
      status: this.status,
      goal: this.input.goal,
      requester: this.input.requester,
      turns: this.state?.turns ?? 0,
      maxTurns: this.input.maxTurns,
      policyVersion: this.state?.snapshot.version,
      pending: requests.filter((r) => r.status === 'pending').map(pendingView),
      decided: [...(this.state?.decided ?? []), ...requests.filter((r) => r.status !== 'pending')].map(decidedView),
      counters: {
        toolCallsExecuted: this.state?.toolCallsExecuted ?? 0,
        approvalRequests: this.state?.approvalRequests ?? 0,
        deniedFingerprints: this.state?.deniedFingerprints.length ?? 0,
        rejectedDecisions: this.state?.rejectedDecisions ?? 0,
        continuedAsNew: this.state?.continuedAsNew ?? 0,
      },
      result: this.result,
    };
  }

  private showVisibility(): void {
    const pending = (this.state.parked?.requests ?? []).filter((r) => r.status === 'pending');
    const tools = [...new Set(pending.map((r) => r.toolName))].sort();
    const key = tools.join(',');
    if (this.shownStatus !== this.status || this.shownPending !== key) {
      upsertSearchAttributes([
        { key: statusKey, value: this.status },
        { key: pendingToolsKey, value: tools },
      ]);
      this.shownStatus = this.status;
      this.shownPending = key;
    }
    setCurrentDetails(pendingCard(pending));
  }

  private audit(type: AuditEventType, data: Record<string, unknown>): void {
    this.auditBuffer.push({
      type,
      jobId: this.jobId,
      at: new Date().toISOString(),
      policyVersion: this.state?.snapshot.version,
      data,
    });
  }

  /** Audit never breaks a job: a failed write is dropped, not retried forever. */
  private async flushAudit(): Promise<void> {
    if (this.auditBuffer.length === 0) return;
    const events = this.auditBuffer;
    this.auditBuffer = [];
    try {
      await local.recordAudit({ events });
    } catch {
      // The activity already swallows sink errors; this only covers its own timeouts.
    }
  }

  private shouldContinueAsNew(): boolean {
    const info = workflowInfo();
    const limit = this.input.historyEventLimit;
    return info.continueAsNewSuggested || (limit !== undefined && info.historyLength >= limit);
  }

  /** Waits until no handler runs and every audit event is written; a late signal may add either. */
  private async drain(): Promise<void> {
    do {
      await condition(allHandlersFinished);
      await this.flushAudit();
    } while (!allHandlersFinished() || this.auditBuffer.length > 0);
  }

  private async continueAsNew(): Promise<never> {
    await this.drain();
    const { carried: _previous, ...input } = this.input;
    return continueAsNew<typeof agentJob>({
      ...input,
      carried: { ...this.state, continuedAsNew: this.state.continuedAsNew + 1 },
    });
  }

  private async finish(
    status: JobOutcome,
    extra: { reason?: string; detail?: string; summary?: string } = {},
  ): Promise<AgentJobResult> {
    this.result = { schemaVersion: 1, status, turns: this.state.turns, ...extra };
    this.status = status;
    this.showVisibility();
    await this.drain();
    return this.result;
  }

  // ---- one turn ------------------------------------------------------------

  private async turn(): Promise<AgentJobResult | undefined> {
    this.state.turns++;
    this.showVisibility();
    let assistant: Extract<ChatMessage, { role: 'assistant' }>;
    try {
      assistant = (
        await model.modelTurn({ messages: this.state.messages, toolNames: [...this.allowedTools, COMPLETE_TOOL] })
      ).message;
    } catch (err) {
      this.audit('runtime_error', { code: 'model_error', error: failureMessage(err), turn: this.state.turns });
      return this.finish('failed', { reason: 'model_error', detail: failureMessage(err) });
    }
    assistant = { ...assistant, toolCalls: withUniqueCallIds(assistant.toolCalls) };
    this.state.messages.push(assistant);
    if (assistant.toolCalls.length === 0) {
      this.state.messages.push({ role: 'user', content: Texts.nudge });
      return undefined;
    }
    const calls = assistant.toolCalls.map((c) => preflight(c, this.allowedTools, this.state.snapshot.detectors.roots));
    const now = Date.now();
    const { plan, grants } = await this.evaluate(calls, this.memory(), now);
    this.state.ruleCounters = recordFires(this.state.ruleCounters, plan.fires, now);
    this.auditPlan(plan);

    switch (plan.outcome) {
      case 'stop': {
        const stopping = plan.calls.find((p) => p.fate.kind === 'stop')!.fate as { ruleId: string };
        for (const p of plan.calls) this.toolResult(p.call.callId, Texts.stopped(stopping.ruleId));
        this.audit('policy_task_stopped', { ruleId: stopping.ruleId, reason: 'policy_stopped' });
        return this.finish('aborted', { reason: 'policy_stopped', detail: `stopped by rule ${stopping.ruleId}` });
      }
      case 'redirect': {
        for (const p of plan.calls) this.toolResult(p.call.callId, this.heldResult(p));
        this.rememberRedirects(plan);
        this.injectInstructions(plan.instructions);
        return undefined;
      }
      case 'park':
        await this.park(plan);
        return undefined;
      case 'run':
        return this.runBatch(plan, grants);
    }
  }

  /**
   * One policy evaluation for the batch (a local activity); when judged
   * rules are candidates, the judge answers first and the batch is
   * evaluated again with its verdicts.
   */
  private async evaluate(
    calls: PreflightedCall[],
    memory: ReturnType<Job['memory']>,
    now: number,
  ): Promise<{ plan: BatchPlan; grants: Readonly<Record<string, Grant>> }> {
    const base = { jobId: this.jobId, scope: this.input.scope, snapshot: this.state.snapshot, calls, memory, ruleCounters: this.state.ruleCounters, now };
    if (!calls.some((c) => c.kind === 'tool')) {
      // Nothing for the rules to look at: no activity at all.
      return { plan: planBatch({ ...base, evaluations: new Map() }), grants: {} };
    }
    let result = await local.evaluatePolicy(base);
    if (result.judge.length > 0) {
      result = await local.evaluatePolicy({ ...base, verdicts: await this.askJudge(result.judge) });
    }
    if (result.plan === undefined) throw new Error('policy evaluation returned no plan after the judge answered');
    return { plan: result.plan, grants: result.grants };
  }

  /**
   * Judge questions, side by side on the judge queue. A failure is a
   * verdict too (`failed`): the evaluation's failure table decides what it
   * means, and it never stops the job.
   */
  private async askJudge(requests: readonly JudgeRequest[]): Promise<Record<string, Record<string, JudgeVerdict>>> {
    const { model, timeoutMs } = this.state.snapshot.judge;
    const recentTurns = recentTurnsForJudge(this.state.messages);
    const answers = await Promise.all(
      requests.map(async (r) => {
        try {
          return await judgeQueue.judgeRules.executeWithOptions(
            {
              taskQueue: TaskQueues.judge,
              // Waiting for a busy or absent judge worker counts against the same short budget.
              scheduleToCloseTimeout: timeoutMs + 5_000,
              retry: { maximumAttempts: 1 },
              summary: `judge ${r.rules.length} rule(s) for ${r.call.tool}`,
            },
            [{ rules: r.rules, call: r.call, recentTurns, model, timeoutMs, cacheKey: r.cacheKey }],
          );
        } catch (err) {
          return { outcome: { status: 'error' as const, detail: failureMessage(err) }, latencyMs: 0, model, cached: false };
        }
      }),
    );
    const verdicts: Record<string, Record<string, JudgeVerdict>> = {};
    requests.forEach((r, i) => {
      const answer = answers[i]!;
      const byRule: Record<string, JudgeVerdict> = {};
      for (const candidate of r.candidates) {
        const decision = answer.outcome.status === 'ok' ? answer.outcome.decisions.find((d) => d.ruleId === candidate.ruleId) : undefined;
        const verdict: JudgeVerdict = answer.outcome.status !== 'ok' ? 'failed' : (decision?.result ?? 'unknown');
        byRule[candidate.ruleId] = verdict;
        this.audit('judge_result', {
          callId: r.callId,
          toolName: r.call.tool,
          ruleId: candidate.ruleId,
          result: verdict,
          confidence: decision?.confidence,
          status: answer.outcome.status,
          detail: answer.outcome.status === 'ok' ? undefined : answer.outcome.detail,
          enforced: candidate.enforced,
          shadow: !candidate.enforced,
          latencyMs: answer.latencyMs,
          model: answer.model,
          cached: answer.cached,
        });
      }
      verdicts[r.callId] = byRule;
    });
    return verdicts;
  }

  private memory() {
    return {
      deniedFingerprints: this.state.deniedFingerprints,
      redirectedFingerprints: this.state.redirectedFingerprints,
      approvalRequests: this.state.approvalRequests,
      maxApprovalRequests: this.input.maxApprovalRequests,
    };
  }

  private auditPlan(plan: BatchPlan): void {
    for (const p of plan.calls) {
      if (p.evaluation === undefined) continue;
      const base = { callId: p.call.callId, toolName: p.call.toolName };
      this.audit('policy_evaluation', {
        ...base,
        category: p.call.kind === 'tool' ? p.call.category : undefined,
        decision: p.evaluation.decision,
        outcome: p.fate.kind,
        argsSummary: p.call.kind === 'tool' ? summarizeArgs(p.call.args) : undefined,
      });
      this.auditMatches(base, p.evaluation.matches, p.evaluation.detectors);
      if (p.fate.kind === 'deny') {
        this.audit('policy_tool_denied', { ...base, ruleId: p.fate.ruleId, fingerprint: p.fate.fingerprint, reason: p.fate.message });
      }
    }
  }

  private auditMatches(base: { callId: string; toolName: string }, matches: readonly RuleMatch[], detectors?: readonly string[]): void {
    for (const m of matches) {
      this.audit('policy_rule_matched', {
        ...base,
        ruleId: m.ruleId,
        ruleVersion: m.ruleVersion,
        action: m.action,
        shadow: m.shadow,
        ...(m.judged === true ? { detail: m.fallback === true ? 'judge failed: approval as fallback' : 'judge match' } : {}),
        ...(m.duplicate === true ? { outcome: 'duplicate' } : {}),
        ...(detectors !== undefined && detectors.length > 0 ? { detectors } : {}),
      });
      // notify_admin never restricts anyone: it queues a note for the administrator in the audit log.
      if (m.action === 'notify_admin' && !m.shadow && m.duplicate !== true) {
        this.audit('policy_notification_queued', { ...base, ruleId: m.ruleId, ruleVersion: m.ruleVersion });
      }
    }
  }

  /** Results of calls that do not run because the batch is re-planned or parked. */
  private heldResult(p: PlannedCall): string {
    switch (p.fate.kind) {
      case 'error':
        return p.fate.message;
      case 'deny':
        return p.fate.message;
      case 'redirect':
        return Texts.redirected(p.fate.ruleId);
      case 'complete':
        return Texts.completeNotAccepted;
      default:
        return Texts.heldForRedirect;
    }
  }

  private rememberRedirects(plan: BatchPlan): void {
    for (const p of plan.calls) {
      if (p.fate.kind === 'redirect' && !this.state.redirectedFingerprints.includes(p.fate.fingerprint)) {
        this.state.redirectedFingerprints.push(p.fate.fingerprint);
      }
    }
  }

  /** Appends a call's result; returns its place so a result decided later can fill it in call order. */
  private toolResult(callId: string, content: string): number {
    return this.state.messages.push({ role: 'tool', toolCallId: callId, content }) - 1;
  }

  private fillResult(slot: number, callId: string, content: string): void {
    this.state.messages[slot] = { role: 'tool', toolCallId: callId, content };
  }

  private injectInstructions(instructions: readonly string[]): void {
    if (instructions.length === 0) return;
    this.state.messages.push({ role: 'user', content: instructionMessage(instructions) });
    this.audit('policy_instruction_injected', { instructions: instructions.length, turn: this.state.turns });
  }

  // ---- run a batch -----------------------------------------------------------

  private async runBatch(plan: BatchPlan, grants: Readonly<Record<string, Grant>>): Promise<AgentJobResult | undefined> {
    let complete: { callId: string; summary: string; slot: number } | undefined;
    for (const p of plan.calls) {
      const { call, fate } = p;
      switch (fate.kind) {
        case 'error':
        case 'deny':
          this.toolResult(call.callId, fate.message);
          break;
        case 'complete':
          // Its result is decided after the other calls ran; its place is kept so the order stays the call order.
          if (complete === undefined) complete = { callId: call.callId, summary: fate.summary, slot: this.toolResult(call.callId, '') };
          else this.toolResult(call.callId, Texts.duplicateComplete);
          break;
        case 'run':
          if (call.kind === 'tool') {
            this.toolResult(
              call.callId,
              await this.execute(call, { ruleId: null, ruleVersion: null, fingerprint: fate.fingerprint }, grants[call.callId]),
            );
          }
          break;
        default:
          throw new Error(`unexpected ${fate.kind} in a batch that runs`);
      }
    }
    if (complete === undefined) {
      await this.flushAudit();
      return undefined;
    }
    return this.completionGate(complete);
  }

  /**
   * `complete` is accepted unless a completion.before_accept rule denies or
   * redirects it, at most once per rule per job.
   */
  private async completionGate(complete: { callId: string; summary: string; slot: number }): Promise<AgentJobResult | undefined> {
    const now = Date.now();
    const evaluation = evaluateCall(
      this.state.snapshot,
      'completion.before_accept',
      { toolName: COMPLETE_TOOL, category: 'control', args: { summary: complete.summary }, scope: this.input.scope },
      this.state.ruleCounters,
      now,
    );
    this.auditMatches({ callId: complete.callId, toolName: COMPLETE_TOOL }, evaluation.matches);
    const blocking = evaluation.matches.filter(
      (m) =>
        !m.shadow &&
        (m.decision === 'deny' || m.decision === 'redirect') &&
        !this.state.completionRuleFires.includes(m.ruleId),
    );
    this.state.ruleCounters = recordFires(this.state.ruleCounters, evaluation.matches, now);
    if (blocking.length > 0) {
      const instructions: string[] = [];
      for (const m of blocking) {
        this.state.completionRuleFires.push(m.ruleId);
        const text = ruleById(this.state.snapshot, m.ruleId)?.instruction;
        if (text !== undefined && !instructions.includes(text)) instructions.push(text);
        this.audit('policy_tool_denied', { callId: complete.callId, toolName: COMPLETE_TOOL, ruleId: m.ruleId, reason: 'completion not accepted' });
      }
      const first = blocking[0]!;
      this.fillResult(complete.slot, complete.callId, Texts.completeRejected(first.ruleId, ruleById(this.state.snapshot, first.ruleId)?.instruction));
      this.injectInstructions(instructions);
      await this.flushAudit();
      return undefined;
    }
    this.fillResult(complete.slot, complete.callId, Texts.completeAccepted);
    return this.finish('completed', { summary: complete.summary });
  }

  /**
   * Runs one call on the tools queue with a grant. A grant that expired
   * while the tools worker was away is replaced; anything else is reported
   * to the model, never retried as a new side effect.
   */
  private async execute(
    call: ToolPreflight,
    binding: { ruleId: string | null; ruleVersion: number | null; fingerprint: string; nonce?: string },
    grant: Grant | undefined,
  ): Promise<string> {
    let current = grant;
    for (let attempt = 1; ; attempt++) {
      if (current === undefined) {
        const issued = await local.issueGrants({
          jobId: this.jobId,
          calls: [{ callId: call.callId, fingerprint: binding.fingerprint, ...(binding.nonce !== undefined ? { nonce: binding.nonce } : {}) }],
        });
        current = issued.grants[call.callId];
      }
      try {
        const result = await tools.execute.executeWithOptions(
          {
            taskQueue: TaskQueues.tools,
            startToCloseTimeout: '10 minutes',
            // Safe to retry: the nonce is consumed before the side effect, so a retry reports instead of re-running.
            retry: { initialInterval: '2 seconds', maximumAttempts: 10 },
            summary: `${call.toolName} ${summarizeArgs(call.args, 80)}`,
          },
          [
            {
              jobId: this.jobId,
              callId: call.callId,
              scope: this.input.scope,
              toolName: call.toolName,
              args: call.args,
              ruleId: binding.ruleId,
              ruleVersion: binding.ruleVersion,
              grant: current!,
            },
          ],
        );
        this.state.toolCallsExecuted++;
        this.audit('tool_executed', {
          callId: call.callId,
          toolName: call.toolName,
          fingerprint: binding.fingerprint,
          ruleId: binding.ruleId ?? undefined,
          ok: result.ok,
          replayed: result.replayed,
          executed: true,
        });
        return result.output;
      } catch (err) {
        if (failureType(err) === FailureTypes.GrantExpired && attempt < GRANT_ATTEMPTS) {
          current = undefined;
          continue;
        }
        this.audit('runtime_error', { callId: call.callId, toolName: call.toolName, code: failureType(err) ?? 'execute_failed', error: failureMessage(err) });
        return Texts.executeFailed(failureMessage(err));
      }
    }
  }

  // ---- approvals -------------------------------------------------------------

  private async park(proposed: BatchPlan): Promise<void> {
    const now = Date.now();
    const gated = proposed.calls.filter((p) => p.fate.kind === 'approval');
    // One prepare per gated call; issued together so they run side by side.
    const prepared = await Promise.all(
      gated.map(async (p) => {
        try {
          return await tools.prepareApproval.executeWithOptions(
            { ...toolOptions, summary: `prepare ${p.call.toolName}` },
            [{ toolName: p.call.toolName, args: (p.call as ToolPreflight).args }],
          );
        } catch (err) {
          return { failed: failureMessage(err) };
        }
      }),
    );
    // A call whose target could not be prepared is not requested: it is answered "not executed".
    const failedPrepare = new Map<string, string>();
    gated.forEach((p, i) => {
      const prep = prepared[i]!;
      if ('failed' in prep) failedPrepare.set(p.call.callId, prep.failed);
    });
    const plan: BatchPlan =
      failedPrepare.size === 0
        ? proposed
        : {
            ...proposed,
            calls: proposed.calls.map((p) => {
              const why = failedPrepare.get(p.call.callId);
              if (why === undefined || p.fate.kind !== 'approval') return p;
              this.audit('runtime_error', { callId: p.call.callId, toolName: p.call.toolName, code: 'prepare_failed', error: why });
              return { ...p, fate: { kind: 'deny', ruleId: p.fate.ruleId, fingerprint: p.fate.fingerprint, message: Texts.prepareFailed(why) } };
            }),
          };
    const requests: ApprovalRequest[] = gated.flatMap((p, i) => {
      const prep = prepared[i]!;
      if ('failed' in prep) return [];
      const fate = p.fate as Extract<PlannedCall['fate'], { kind: 'approval' }>;
      const gating = approvalRules(this.state.snapshot, p);
      const settings = mergeApprovalSettings(gating);
      const rule = ruleById(this.state.snapshot, fate.ruleId);
      const nobody = settings.reviewers !== null && settings.reviewers.length === 0 ? ['no reviewer is allowed by every rule: this request can only expire'] : [];
      const reason = [
        ...gating.map((r) => [r.name, r.instruction].filter((x) => x !== undefined).join(' — ')),
        ...prep.warnings,
        ...nobody,
      ].join(' — ');
      return [
        {
          requestId: prep.requestId,
          callId: p.call.callId,
          toolName: p.call.toolName,
          args: (p.call as ToolPreflight).args,
          fingerprint: fate.fingerprint,
          nonce: prep.nonce,
          ruleId: fate.ruleId,
          ruleVersion: fate.ruleVersion,
          reason: reason === '' ? (rule?.name ?? fate.ruleId) : reason,
          editable: settings.editable,
          reviewers: settings.reviewers,
          separateRequester: settings.separateRequester,
          signatureRequired: settings.signatureRequired,
          requester: this.input.requester,
          observed: prep.observed,
          createdAt: now,
          expiresAt: now + settings.ttlMs,
          status: 'pending' as const,
          decision: null,
        },
      ];
    });
    for (const r of requests) {
      this.audit('approval_requested', {
        requestId: r.requestId,
        callId: r.callId,
        toolName: r.toolName,
        ruleId: r.ruleId,
        ruleVersion: r.ruleVersion,
        fingerprint: r.fingerprint,
        requester: r.requester,
        argsSummary: summarizeArgs(r.args),
        expiresAt: new Date(r.expiresAt).toISOString(),
      });
    }
    this.state.approvalRequests += requests.length;
    this.state.parked = { plan, requests, parkedAt: now };
    this.status = 'awaiting_approval';
  }

  private decisionContext() {
    return { jobId: this.jobId, scope: this.input.scope, now: Date.now(), roots: this.state?.snapshot.detectors.roots ?? [] };
  }

  private checkDecision(payload: unknown): DecisionCheck {
    return checkDecision(this.state?.parked?.requests ?? [], payload, this.decisionContext());
  }

  private rejected(check: Extract<DecisionCheck, { ok: false }>, via: string): Extract<DecisionCheck, { ok: false }> {
    if (this.state !== undefined) this.state.rejectedDecisions++;
    this.audit(mismatchCodes.has(check.code) ? 'approval_fingerprint_mismatch' : 'approval_decided', {
      requestId: check.requestId,
      reviewer: check.reviewer,
      code: check.code,
      reason: check.message,
      outcome: 'rejected',
      via,
    });
    return check;
  }

  /**
   * The one handler behind the signal and the update. A signature is
   * verified by an activity, then the decision is checked again (another may
   * have landed meanwhile). A rejection is audited and changes nothing else.
   */
  private async applyDecision(payload: unknown, via: 'signal' | 'update'): Promise<DecisionCheck> {
    let check = this.checkDecision(payload);
    if (!check.ok) return this.rejected(check, via);
    if (check.payload.signature !== undefined) {
      let verified: { valid: true } | { valid: false; reason: string };
      try {
        verified = await local.verifyDecision({ jobId: this.jobId, payload: check.payload });
      } catch (err) {
        // A handler that throws would fail the job: an unverifiable signature is just a rejected decision.
        verified = { valid: false, reason: `the signature could not be verified: ${failureMessage(err)}` };
      }
      if (!verified.valid) {
        return this.rejected(
          { ok: false, code: 'signature_invalid', message: verified.reason, requestId: check.request.requestId, reviewer: check.payload.reviewer },
          via,
        );
      }
      check = this.checkDecision(payload);
      if (!check.ok) return this.rejected(check, via);
    }
    const { request, payload: decision, edit } = check;
    request.status = decision.decision === 'approve' ? 'approved' : 'denied';
    request.decision = {
      decision: decision.decision,
      reviewer: decision.reviewer,
      reason: decision.reason ?? null,
      decidedAt: Date.now(),
      editedArgs: edit?.args ?? null,
      editedFingerprint: edit?.fingerprint ?? null,
    };
    if (request.status === 'denied' && !this.state.deniedFingerprints.includes(request.fingerprint)) {
      this.state.deniedFingerprints.push(request.fingerprint);
    }
    this.audit('approval_decided', {
      requestId: request.requestId,
      toolName: request.toolName,
      decision: decision.decision,
      reviewer: decision.reviewer,
      reason: decision.reason,
      originalFingerprint: request.fingerprint,
      editedFingerprint: edit?.fingerprint,
      outcome: 'accepted',
      via,
      detail: decision.signature !== undefined ? 'signed' : undefined,
    });
    return check;
  }

  /** A rejection a client saw on `decide`: audited with the job's own verdict, never applied. */
  private auditReportedRejection(payload: unknown): void {
    const check = this.checkDecision(payload);
    if (!check.ok) {
      this.rejected(check, 'update');
      return;
    }
    // The job would accept it now (state moved on since the client's attempt); record, do not act.
    this.audit('approval_decided', {
      requestId: check.request.requestId,
      reviewer: check.payload.reviewer,
      code: 'reported_rejection',
      outcome: 'rejected',
      via: 'update',
    });
  }

  /** Parks until every request of the batch is decided or expired. */
  private async awaitDecisions(): Promise<'decided' | 'continue_as_new'> {
    const requests = this.state.parked!.requests;
    const pending = () => requests.filter((r) => r.status === 'pending');
    for (;;) {
      const now = Date.now();
      for (const r of pending()) {
        if (r.expiresAt <= now) {
          r.status = 'expired';
          if (!this.state.deniedFingerprints.includes(r.fingerprint)) this.state.deniedFingerprints.push(r.fingerprint);
          this.audit('approval_expired', { requestId: r.requestId, toolName: r.toolName, fingerprint: r.fingerprint, reason: 'expired' });
        }
      }
      this.showVisibility();
      await this.flushAudit();
      const open = pending();
      if (open.length === 0) return 'decided';
      if (this.shouldContinueAsNew()) return 'continue_as_new';
      const nextExpiry = Math.min(...open.map((r) => r.expiresAt));
      await condition(
        () => pending().length < open.length || this.auditBuffer.length > 0 || this.shouldContinueAsNew(),
        Math.max(1, nextExpiry - Date.now()),
      );
    }
  }

  /**
   * After every decision: edited calls are re-evaluated (deny/stop wins),
   * approved ones re-validated against the world as it is now, then run
   * once; everything else gets a result saying why it did not run.
   */
  private async finishParkedBatch(): Promise<AgentJobResult | undefined> {
    const { plan, requests } = this.state.parked!;
    const byCall = new Map(requests.map((r) => [r.callId, r]));
    const editOutcome = await this.reevaluateEdits(requests);
    if (editOutcome.stop !== undefined) {
      for (const p of plan.calls) this.toolResult(p.call.callId, Texts.stopped(editOutcome.stop));
      this.audit('policy_task_stopped', { ruleId: editOutcome.stop, reason: 'policy_stopped' });
      this.closeParked();
      return this.finish('aborted', { reason: 'policy_stopped', detail: `stopped by rule ${editOutcome.stop} (edited call)` });
    }
    this.status = 'running';
    this.showVisibility();
    for (const p of plan.calls) {
      const { call, fate } = p;
      if (fate.kind === 'run' && call.kind === 'tool') {
        this.toolResult(call.callId, await this.execute(call, { ruleId: null, ruleVersion: null, fingerprint: fate.fingerprint }, undefined));
        continue;
      }
      if (fate.kind !== 'approval' || call.kind !== 'tool') {
        this.toolResult(call.callId, this.heldResult(p));
        continue;
      }
      const request = byCall.get(call.callId)!;
      this.toolResult(call.callId, await this.runApproved(call, request, editOutcome.denied.get(call.callId)));
    }
    this.rememberRedirects(plan);
    this.injectInstructions(plan.instructions);
    this.closeParked();
    await this.flushAudit();
    return undefined;
  }

  private async runApproved(
    call: ToolPreflight,
    request: ApprovalRequest,
    editDenied: string | undefined,
  ): Promise<string> {
    if (request.status === 'expired') return Texts.expired;
    if (request.status === 'denied') return Texts.deniedByReviewer(request.decision!.reviewer, request.decision!.reason);
    if (editDenied !== undefined) return editDenied;
    const decision = request.decision!;
    const args = decision.editedArgs ?? request.args;
    let check;
    try {
      check = await tools.revalidate.executeWithOptions(
        { ...toolOptions, summary: `revalidate ${call.toolName}` },
        [
          {
            toolName: call.toolName,
            args,
            originalArgs: request.args,
            allowedTools: this.allowedTools,
            reviewer: decision.reviewer,
            reviewers: request.reviewers,
            separateRequester: request.separateRequester,
            requester: request.requester,
            observed: request.observed,
          },
        ],
      );
    } catch (err) {
      this.audit('runtime_error', { callId: call.callId, toolName: call.toolName, requestId: request.requestId, code: 'revalidate_failed', error: failureMessage(err), executed: false });
      return Texts.revalidateFailed(failureMessage(err));
    }
    if (!check.ok) {
      this.audit('runtime_error', { callId: call.callId, toolName: call.toolName, requestId: request.requestId, code: 'revalidation_failed', reason: check.reason, executed: false });
      return Texts.revalidationFailed(check.reason);
    }
    const output = await this.execute(
      { ...call, args },
      {
        ruleId: request.ruleId,
        ruleVersion: request.ruleVersion,
        fingerprint: decision.editedFingerprint ?? request.fingerprint,
        nonce: request.nonce,
      },
      undefined,
    );
    const edited = decision.editedArgs === null ? [] : Object.keys(decision.editedArgs).filter((k) => JSON.stringify(decision.editedArgs![k]) !== JSON.stringify(request.args[k]));
    return edited.length > 0 ? `${output}\n${Texts.edited(edited)}` : output;
  }

  /** Re-evaluates edited calls by policy; a stop ends the job, a deny keeps that call from running. */
  private async reevaluateEdits(requests: readonly ApprovalRequest[]): Promise<{ stop: string | undefined; denied: Map<string, string> }> {
    const denied = new Map<string, string>();
    const edited = requests.filter((r) => r.status === 'approved' && r.decision?.editedArgs != null);
    if (edited.length === 0) return { stop: undefined, denied };
    const calls: PreflightedCall[] = edited.map((r) => ({
      callId: r.callId,
      toolName: r.toolName,
      kind: 'tool',
      category: getTool(r.toolName)!.category,
      args: r.decision!.editedArgs!,
    }));
    const byCall = new Map(edited.map((r) => [r.callId, r]));
    const originals = new Map((this.state.parked?.plan.calls ?? []).map((p) => [p.call.callId, p]));
    // The reviewer already approved this call: the approval budget does not apply to it again.
    const { plan } = await this.evaluate(calls, { ...this.memory(), approvalRequests: 0, maxApprovalRequests: Number.MAX_SAFE_INTEGER }, Date.now());
    this.auditPlan(plan);
    for (const p of plan.calls) {
      const request = byCall.get(p.call.callId)!;
      switch (p.fate.kind) {
        case 'stop':
          return { stop: p.fate.ruleId, denied };
        case 'deny':
          denied.set(p.call.callId, Texts.editDenied(p.fate.message));
          break;
        case 'redirect':
          denied.set(p.call.callId, Texts.editDenied(Texts.redirected(p.fate.ruleId)));
          break;
        case 'approval': {
          // The reviewer's approval covers the rules the original call was under, no other.
          const original = originals.get(p.call.callId);
          const covered = new Set((original === undefined ? [] : approvalRules(this.state.snapshot, original)).map((r) => `${r.id}@${r.version}`));
          const extra = approvalRules(this.state.snapshot, p).find((r) => !covered.has(`${r.id}@${r.version}`));
          if (extra !== undefined || !covered.has(`${request.ruleId}@${request.ruleVersion}`)) {
            denied.set(p.call.callId, Texts.editNeedsOwnApproval(extra?.id ?? p.fate.ruleId));
          }
          break;
        }
        default:
          break;
      }
    }
    return { stop: undefined, denied };
  }

  private closeParked(): void {
    const requests = this.state.parked?.requests ?? [];
    this.state.decided = [...this.state.decided, ...requests].slice(-MAX_DECIDED_KEPT);
    this.state.parked = null;
  }
}

/** Every rule that asks for approval of this planned call (not only the deciding one). */
function approvalRules(snapshot: PolicySnapshot, planned: PlannedCall): Rule[] {
  return (planned.evaluation?.matches ?? [])
    .filter((m) => m.decision === 'require_approval' && !m.shadow)
    .flatMap((m) => {
      const rule = ruleById(snapshot, m.ruleId);
      return rule === undefined ? [] : [rule];
    });
}

function systemPrompt(jobId: string, snapshot: PolicySnapshot, tools: readonly string[]): string {
  return [
    `You are an operations agent working on a home server (job ${jobId}).`,
    `You act only through tool calls: ${tools.join(', ')}. Call complete, alone, with a short summary when the goal is reached.`,
    'Every call passes a policy gate first; some wait for a person to approve them, and the result tells you what happened.',
    ...(snapshot.instructions.length > 0 ? ['Standing instructions:', ...snapshot.instructions.map((t) => `- ${t}`)] : []),
  ].join('\n');
}

function failureType(err: unknown): string | undefined {
  const cause = err instanceof ActivityFailure ? err.cause : err;
  return cause instanceof ApplicationFailure ? (cause.type ?? undefined) : undefined;
}

function failureMessage(err: unknown): string {
  const cause = err instanceof ActivityFailure && err.cause !== undefined ? err.cause : err;
  return cause instanceof Error ? cause.message : String(cause);
}
