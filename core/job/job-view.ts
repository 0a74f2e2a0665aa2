import type { ApprovalRequest, PendingRequest } from '../approval/approvals';
import type { AuditHealth } from '../audit/backlog';
import { parkedBatchView, type ParkedBatchView } from './batch-view';
import type { CallOutcome, CarriedState, ReconciledCall } from './carried-state';
import type { AgentJobResult, ParsedAgentJobInput } from './job-input';
import type { JobFacts } from './job-facts';
import { maskPreview, maskString, maskValue } from '../redaction/masking';
import type { ContentPreview } from '../tools/content-preview';
import type { Reversibility } from '../tools/undo';
import type { StandingMark, StandingSettings } from '../approval/standing';
import { mapObservedText, type ObservedState } from '../tools/observed-state';
import type { JobStatus } from '../temporal/search-attributes';

/** A pending request as reviewers see it: arguments masked, times readable. */
export interface PendingRequestView {
  readonly requestId: string;
  readonly callId: string;
  readonly toolName: string;
  readonly args: unknown;
  readonly ruleId: string;
  readonly ruleVersion: number;
  readonly reason: string;
  readonly fingerprint: string;
  readonly nonce: string;
  readonly observed: readonly ObservedState[];
  /** What a write would change in the file's content, masked. */
  readonly preview?: ContentPreview;
  /** The machine the call runs on, when the tools config lists several. */
  readonly machine?: string;
  /** Whether the change can be undone (tools that keep one), its reason masked. */
  readonly undo?: Reversibility;
  /** What a standing approval of this call may be (absent: its rules allow none). */
  readonly standing?: StandingSettings;
  readonly editable: readonly string[];
  readonly reviewers: readonly string[] | null;
  /** A decision must be signed (key or passkey); absent in views of builds before. */
  readonly signatureRequired?: boolean;
  /** The requester may not decide; absent in views of builds before. */
  readonly separateRequester?: boolean;
  readonly requester: string;
  readonly createdAt: string;
  readonly expiresAt: string;
}

export interface DecidedRequestView {
  readonly requestId: string;
  /** The call it decided (absent in views of builds before). */
  readonly callId?: string;
  readonly toolName: string;
  readonly status: ApprovalRequest['status'];
  readonly reviewer: string | null;
  readonly reason: string | null;
  readonly fingerprint: string;
  readonly editedFingerprint: string | null;
  readonly decidedAt: string | null;
  /**
   * What became of an approved call: `executed`, `failed` (the tool
   * returned an error), `refused` (the re-check before running refused it)
   * or `unknown`; null while it has not run, for a denied or expired one,
   * and in views of older workers.
   */
  readonly outcome?: CallOutcome['outcome'] | null;
  /** The tool's output or error for a call that did not execute, masked. */
  readonly outcomeDetail?: string | null;
  /** What the card said of undo (tools that keep one), its reason masked; `airlock undo` takes back an executed reversible change. */
  readonly undo?: Reversibility;
  /** The approval made a standing approval, or the call ran under one. */
  readonly standing?: StandingMark;
}

/** What query `state` returns. */
export interface AgentJobStateView {
  readonly schemaVersion: 1;
  readonly jobId: string;
  readonly status: JobStatus;
  readonly goal: string;
  readonly requester: string;
  readonly turns: number;
  readonly maxTurns: number;
  readonly policyVersion: string | undefined;
  readonly pending: readonly PendingRequestView[];
  /** The batch the job is parked on: the model's stated reason and every call with its decision (absent in older workers' views). */
  readonly batch?: ParkedBatchView | null;
  readonly decided: readonly DecidedRequestView[];
  /**
   * Calls whose executing attempt died before recording an outcome, as a
   * retry settled them from the target: `ran_before` (its effect was in
   * place), `ran_now` (it was not, the target was unchanged, it ran then)
   * or `unknown` (neither could be told).
   */
  readonly reconciled: readonly ReconciledCall[];
  readonly counters: {
    readonly toolCallsExecuted: number;
    readonly approvalRequests: number;
    readonly deniedFingerprints: number;
    readonly rejectedDecisions: number;
    readonly continuedAsNew: number;
  };
  readonly result: AgentJobResult | null;
  /**
   * Present once an audit write failed in the job: events waiting to be
   * written again, events given up on, failed writes and the last error.
   */
  readonly audit?: AuditHealth;
}

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * A preview as it may leave the job. The tools side masked each whole text
 * before the diff; this masks again line by line (a mask here cannot span
 * lines, so it cannot hide one side's lines behind the other's).
 */
function maskedPreview(preview: ContentPreview): ContentPreview {
  const path = maskString(preview.path);
  if (preview.kind !== 'text') return { ...preview, path };
  return { ...preview, path, lines: preview.lines.map(maskString) };
}

export function pendingView(request: PendingRequest): PendingRequestView {
  return {
    requestId: request.requestId,
    callId: request.callId,
    toolName: request.toolName,
    args: maskValue(request.args),
    ruleId: request.ruleId,
    ruleVersion: request.ruleVersion,
    reason: maskString(request.reason),
    fingerprint: request.fingerprint,
    nonce: request.nonce,
    observed: request.observed.map((o) => mapObservedText(o, maskString)),
    ...(request.preview !== undefined ? { preview: maskedPreview(request.preview) } : {}),
    ...(request.machine !== undefined ? { machine: request.machine } : {}),
    ...(request.undo !== undefined ? { undo: maskedUndo(request.undo) } : {}),
    ...(request.standing !== undefined ? { standing: request.standing } : {}),
    editable: request.editable,
    reviewers: request.reviewers,
    signatureRequired: request.signatureRequired,
    separateRequester: request.separateRequester,
    requester: request.requester,
    createdAt: iso(request.createdAt),
    expiresAt: iso(request.expiresAt),
  };
}

/** How a pending request becomes its view: `pendingView`, or a memo of it (`pendingViews`). */
export type PendingViewOf = (request: PendingRequest) => PendingRequestView;

/**
 * `pendingView` remembered per request: a request is replaced when it
 * changes, never changed in place, so its view stays true while the object
 * lives. A job parked on a megabyte write masks it once, not at every
 * query, card and memo.
 */
export function pendingViews(): PendingViewOf {
  const views = new WeakMap<PendingRequest, PendingRequestView>();
  return (request) => {
    const known = views.get(request);
    if (known !== undefined) return known;
    const view = pendingView(request);
    views.set(request, view);
    return view;
  };
}

export function decidedView(request: ApprovalRequest, outcomes: readonly CallOutcome[] = []): DecidedRequestView {
  const decision = request.status === 'approved' || request.status === 'denied' ? request.decision : null;
  const outcome = request.status === 'approved' ? [...outcomes].reverse().find((o) => o.requestId === request.requestId) : undefined;
  return {
    requestId: request.requestId,
    callId: request.callId,
    toolName: request.toolName,
    status: request.status,
    reviewer: decision?.reviewer ?? null,
    reason: decision === null || decision.reason === null ? null : maskString(decision.reason),
    fingerprint: request.fingerprint,
    editedFingerprint: decision?.decision === 'approve' ? decision.editedFingerprint : null,
    decidedAt: decision === null ? null : iso(decision.decidedAt),
    outcome: outcome?.outcome ?? null,
    outcomeDetail: outcome === undefined || outcome.outcome === 'executed' ? null : maskPreview(outcome.detail, 300),
    ...(request.undo !== undefined ? { undo: maskedUndo(request.undo) } : {}),
    ...(decision?.decision === 'approve' && decision.standing !== undefined ? { standing: decision.standing } : {}),
  };
}

const maskedUndo = (undo: Reversibility): Reversibility => (undo.reversible ? undo : { ...undo, why: maskString(undo.why) });

export function isPending(request: ApprovalRequest): request is PendingRequest {
  return request.status === 'pending';
}

/** The query view of a job; before its state exists (the first moments of a run) counters are zero. */
export function jobView(input: {
  readonly jobId: string;
  readonly status: JobStatus;
  readonly job: ParsedAgentJobInput;
  readonly state: CarriedState | undefined;
  readonly result: AgentJobResult | null;
  readonly audit?: AuditHealth | undefined;
  /** How a pending request becomes its view: the job's memo of them. */
  readonly pendingViewOf: PendingViewOf;
}): AgentJobStateView {
  const { state } = input;
  const requests = state?.parked?.requests ?? [];
  return {
    schemaVersion: 1,
    jobId: input.jobId,
    status: input.status,
    goal: maskString(input.job.goal),
    requester: input.job.requester,
    turns: state?.turns ?? 0,
    maxTurns: input.job.maxTurns,
    policyVersion: state?.snapshot.version,
    pending: requests.filter(isPending).map((r) => input.pendingViewOf(r)),
    batch: state?.parked != null ? parkedBatchView(state.parked) : null,
    decided: [...(state?.decided ?? []), ...requests.filter((r) => !isPending(r))].map((r) => decidedView(r, state?.outcomes ?? [])),
    reconciled: state?.reconciled ?? [],
    counters: {
      toolCallsExecuted: state?.toolCallsExecuted ?? 0,
      approvalRequests: state?.approvalRequests ?? 0,
      deniedFingerprints: state?.deniedFingerprints.length ?? 0,
      rejectedDecisions: state?.rejectedDecisions ?? 0,
      continuedAsNew: state?.continuedAsNew ?? 0,
    },
    result: input.result,
    ...(input.audit !== undefined ? { audit: maskedAuditHealth(input.audit) } : {}),
  };
}

/** The last write error names a file and a system error; masked like any text shown. */
export function maskedAuditHealth(audit: AuditHealth): AuditHealth {
  return { ...audit, lastError: audit.lastError === null ? null : maskString(audit.lastError) };
}

/** A job's result as it may be shown anywhere (the summary and detail are model-written text). */
export function maskedResult<R extends { readonly summary?: string; readonly detail?: string; readonly facts?: JobFacts }>(result: R): R {
  return {
    ...result,
    ...(result.summary !== undefined ? { summary: maskString(result.summary) } : {}),
    ...(result.detail !== undefined ? { detail: maskString(result.detail) } : {}),
    ...(result.facts !== undefined ? { facts: maskedFacts(result.facts) } : {}),
  };
}

function maskedFacts(facts: JobFacts): JobFacts {
  return {
    ...facts,
    gated: facts.gated.map((c) => ({
      ...c,
      ...(c.target !== undefined ? { target: maskString(c.target) } : {}),
      ...(c.detail !== undefined ? { detail: maskString(c.detail) } : {}),
    })),
  };
}
