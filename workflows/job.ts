import { issuesText } from '../core/util/errors';
import { allHandlersFinished, ApplicationFailure, condition, workflowInfo } from '@temporalio/workflow';
import { firstCarriedState, restoreCarriedState } from '../core/job/carried-state';
import { describeError } from '../core/temporal/describe-error';
import { FailureTypes } from '../core/temporal/failure-types';
import { agentJobInputSchema, allowedToolsFor, type AgentJobInput, type AgentJobResult, type JobOutcome, type ParsedAgentJobInput } from '../core/job/job-input';
import { parkedBatchView } from '../core/job/batch-view';
import { factsText, jobFacts } from '../core/job/job-facts';
import { requestTarget } from '../core/job/approval-request';
import { jobView, maskedAuditHealth, maskedResult, pendingViews, type AgentJobStateView } from '../core/job/job-view';
import type { JobStatus } from '../core/temporal/search-attributes';
import { systemPrompt } from '../core/job/system-prompt';
import { local } from './activities';
import { AuditBuffer } from './audit-buffer';
import { askRunPatches, type RunPatches } from './patches';
import { JobState } from './job-state';
import { Visibility } from './visibility';

/** Before its state exists a job is starting (a fresh run loads its policy snapshot first). */
export type JobPhase = { readonly kind: 'starting' } | { readonly kind: 'ready'; readonly state: JobState };

type Ending = { readonly reason?: AgentJobResult['reason']; readonly detail?: string; readonly summary?: string };

/**
 * Before a job ends or continues as new, a failed audit write is tried
 * again after these waits; then the job goes on, carrying what is still
 * unwritten (or reporting it lost in its result) rather than waiting for
 * a disk that stays full.
 */
const DRAIN_RETRY_WAITS_MS = [5_000, 20_000] as const;

function invalidInput(message: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, FailureTypes.InvalidInput);
}

function rejectedState(message: string): ApplicationFailure {
  return ApplicationFailure.nonRetryable(message, FailureTypes.StateRejected);
}

/**
 * One run of a job: its input, phase, status and result, and the concerns
 * every step shares (audit buffer, visibility). Ends by finishing or by
 * continuing as new, always with handlers drained and audit written.
 */
export class Job {
  readonly jobId = workflowInfo().workflowId;
  readonly input: ParsedAgentJobInput;
  readonly audit: AuditBuffer;
  status: JobStatus = 'running';
  private phase: JobPhase = { kind: 'starting' };
  private result: AgentJobResult | null = null;
  /** Carried input whose seal `start` checks before anything runs. */
  private unverified: { readonly next: unknown; readonly seal: string | undefined } | undefined;
  private readonly visibility: Visibility;
  /** The hotfixes this run follows (`workflows/patches.ts`): none yet. */
  readonly patches: RunPatches;
  /** How many `newBuild` signals arrived: each wakes a parked job to look whether its target build changed. */
  newBuildSignals = 0;
  /** The assistant text of the latest model turn: the model's stated reason for the batch it proposed. */
  statedReason: string | undefined;
  /** The run is ending or continuing as new: handlers still waiting for the loop give up (a client sends its call again). */
  closing = false;
  private readonly endingHooks: Array<() => void> = [];
  /** Pending requests as reviewers see them, each masked once for the query, the cards and the memo. */
  readonly pendingView = pendingViews();

  constructor(raw: AgentJobInput) {
    const parsed = agentJobInputSchema.safeParse(raw);
    if (!parsed.success) {
      throw invalidInput(`invalid agentJob input: ${issuesText(parsed.error.issues)}`);
    }
    this.input = parsed.data;
    this.patches = askRunPatches();
    this.visibility = new Visibility(this.jobId, parsed.data.goal, this.pendingView);
    const policyVersion = () => (this.phase.kind === 'ready' ? this.phase.state.snapshot.version : undefined);
    this.audit = new AuditBuffer(this.jobId, policyVersion);
    // State before handlers: signals and updates buffered across continue-as-new are delivered on registration.
    if (parsed.data.carried !== undefined) {
      if (workflowInfo().continuedFromExecutionRunId === undefined) {
        throw rejectedState('a job accepts carried state only from its own continue-as-new; start a job with a goal, not with state');
      }
      const restored = restoreCarriedState(parsed.data.carried);
      if (!restored.ok) throw invalidInput(`cannot restore the job's carried state: ${restored.message}`);
      const { carriedSeal, ...next } = raw;
      // A copy taken before any handler runs: the seal covers the input as it arrived, and parsed
      // state may share objects with it that a signal buffered across continue-as-new changes first.
      this.unverified = { next: JSON.parse(JSON.stringify(next)) as unknown, seal: carriedSeal };
      const { audit, ...state } = restored.state;
      this.audit.restore(audit);
      this.ready(new JobState(state, this.input.maxApprovalRequests));
    }
  }

  /** The tools this job may use: those it asked for that its snapshot says the tools config can run. */
  get allowedTools(): string[] {
    return allowedToolsFor(this.input, this.state?.snapshot.tools?.available);
  }

  /** The state, once it exists; handlers that arrive earlier see none. */
  get state(): JobState | undefined {
    return this.phase.kind === 'ready' ? this.phase.state : undefined;
  }

  /**
   * The restored state once its seal is verified, or a fresh one from the
   * policy snapshot taken now (once per job).
   */
  async start(): Promise<JobState> {
    if (this.phase.kind === 'ready') {
      await this.verifyCarried();
      return this.phase.state;
    }
    let loaded;
    try {
      loaded = await local.loadPolicySnapshot({ jobId: this.jobId });
    } catch (err) {
      throw ApplicationFailure.create({
        message: `cannot load the policy snapshot: ${describeError(err)}`,
        type: FailureTypes.PolicyUnavailable,
        nonRetryable: true,
        cause: err instanceof Error ? err : undefined,
      });
    }
    const { snapshot, seal } = loaded;
    const prompt = systemPrompt(this.jobId, snapshot, allowedToolsFor(this.input, snapshot.tools?.available));
    const state = new JobState(firstCarriedState({ snapshot, policySeal: seal, systemPrompt: prompt, goal: this.input.goal }), this.input.maxApprovalRequests);
    this.ready(state);
    return state;
  }

  /** Carried state counts only with the agent worker's seal over this job's input; nothing runs before. */
  private async verifyCarried(): Promise<void> {
    const unverified = this.unverified;
    if (unverified === undefined) return;
    const verdict = await local.verifyState({ jobId: this.jobId, next: unverified.next, seal: unverified.seal });
    if (verdict.valid) {
      this.unverified = undefined;
      return;
    }
    const message = `the job's carried state is refused: ${verdict.reason}`;
    this.audit.record({ type: 'runtime_error', data: { code: FailureTypes.StateRejected, error: message } });
    await this.audit.flush();
    throw rejectedState(message);
  }

  private ready(state: JobState): void {
    this.phase = { kind: 'ready', state };
    if (state.parked !== null) this.status = 'awaiting_approval';
  }

  view(): AgentJobStateView {
    return jobView({ jobId: this.jobId, status: this.status, job: this.input, state: this.state?.current(), result: this.result, audit: this.audit.health(), pendingViewOf: this.pendingView });
  }

  show(): void {
    const parked = this.state?.parked ?? null;
    this.visibility.show(this.status, this.state?.pendingRequests() ?? [], parked === null ? null : parkedBatchView(parked), this.state?.snapshot.links?.approvalPage);
  }

  /**
   * The job was cancelled: it says so where people look, lets running
   * handlers finish and writes its audit, then ends as cancelled (the
   * caller rethrows).
   */
  async cancelled(): Promise<void> {
    this.status = 'cancelled';
    const pending = (this.state?.pendingRequests() ?? []).map((r) => {
      const target = requestTarget(r);
      return { requestId: r.requestId, toolName: r.toolName, ...(target !== undefined ? { target } : {}) };
    });
    this.audit.record({ type: 'job_cancelled', data: { turn: this.state?.turns ?? 0, pending } });
    this.show();
    await this.drain();
  }

  /** Runs when the run starts to end (finish, continue-as-new or cancel), before it waits for the handlers to finish. */
  onEnding(hook: () => void): void {
    this.endingHooks.push(hook);
  }

  /** Appends the one injected user message of a batch, if it has instructions. */
  inject(state: JobState, instructions: readonly string[]): void {
    if (state.addInstructions(instructions)) {
      this.audit.record({ type: 'policy_instruction_injected', data: { instructions: instructions.length, turn: state.turns } });
    }
  }

  /**
   * A newer build is current and this run is pinned to an older one: the
   * server says so in each workflow task's started event, so a replay reads
   * the same answer.
   */
  targetBuildChanged(): boolean {
    return workflowInfo().targetWorkerDeploymentVersionChanged;
  }

  shouldContinueAsNew(): boolean {
    const info = workflowInfo();
    const limit = this.input.historyEventLimit;
    return info.continueAsNewSuggested || (limit !== undefined && info.historyLength >= limit);
  }

  /**
   * Waits until no handler runs and every audit event was handed to a
   * write; a late signal may add either. A failed write is tried again a
   * few times, then left unwritten for the caller to carry or report.
   */
  async drain(): Promise<void> {
    this.closing = true;
    for (const hook of this.endingHooks) hook();
    let retries = 0;
    for (;;) {
      await condition(allHandlersFinished);
      await this.audit.flush(true);
      if (!allHandlersFinished() || this.audit.fresh > 0) continue;
      const wait = DRAIN_RETRY_WAITS_MS[retries++];
      if (this.audit.unwritten === 0 || wait === undefined) return;
      // A decision arriving meanwhile is written with the retry.
      await condition(() => this.audit.fresh > 0, wait);
    }
  }

  async finish(state: JobState, status: JobOutcome, ending: Ending = {}): Promise<AgentJobResult> {
    // The result is stored in history and shown by `describe`: masked like every other surface.
    const facts = jobFacts({ requests: state.knownRequests(), outcomes: state.outcomes(), executed: state.executed() });
    const result: AgentJobResult = maskedResult({ schemaVersion: 1, status, turns: state.turns, ...ending, facts });
    this.result = result;
    this.status = status;
    this.show();
    this.visibility.ended(result);
    this.audit.record({
      type: 'job_ended',
      data: {
        status,
        ...(result.reason !== undefined ? { reason: result.reason } : {}),
        ...(result.detail !== undefined ? { detail: result.detail } : {}),
        facts: factsText(facts),
        gated: facts.gated.length,
        ...(result.summary !== undefined ? { summary: result.summary } : {}),
      },
    });
    await this.drain();
    // Events still unwritten end with the job: the result says how many, and carries them for `airlock audit --recover`.
    const audit = this.audit.health();
    if (audit === undefined) return result;
    const lost = this.audit.lost();
    this.result = { ...result, audit: { ...maskedAuditHealth(audit), ...(lost.length > 0 ? { events: lost } : {}) } };
    return this.result;
  }
}
