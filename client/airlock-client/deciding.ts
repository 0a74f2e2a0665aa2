import type { CliName } from '../../core/approval/card';
import { sign, type KeyObject } from 'node:crypto';
import { WorkflowUpdateFailedError, WorkflowUpdateRPCTimeoutOrCancelledError, WorkflowUpdateStage, type Client } from '@temporalio/client';
import { ApplicationFailure } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import type { ZodType } from 'zod';
import { callFingerprint } from '../../core/approval/fingerprint';
import { type DecisionPayload } from '../../core/approval/approvals';
import { deciderProblem, decisionSigningText, editOutsideRule } from '../../core/approval/decision-check';
import type { PendingRequestView } from '../../core/job/job-view';
import { argAt } from '../../core/policy/conditions';
import { maskValue } from '../../core/redaction/masking';
import type { ShownStatus } from '../../core/temporal/search-attributes';
import { FailureTypes } from '../../core/temporal/failure-types';
import { TaskQueues } from '../../core/temporal/task-queues';
import { getTool } from '../../core/tools/registry';
import { approvalDecisionSignal, decideUpdate, decisionRejectedSignal, type DecideResult } from '../../workflows/messages';
import { standingAskProblem, type StandingAsk } from '../../core/approval/standing';
import { JobError } from '../errors';
import { WORKER_WAIT_MS } from './jobs';
import { pendingOf } from './listing';

/**
 * Deciding a pending request: the payload bound to the request's
 * fingerprint and nonce (signed when the reviewer has a key), sent by the
 * `decide` update, or as a signal the server keeps when no agent worker
 * takes it in time; a rejection is reported so the job audits it.
 */

export interface DecideOptions {
  readonly decision: 'approve' | 'deny';
  /** How the reader types airlock, for the commands messages suggest (default `npx airlock`, which works everywhere). */
  readonly cli?: CliName;
  /** Which request; may be omitted when exactly one is pending. */
  readonly requestId?: string;
  /** New values for editable fields (approve only), as typed on a command line. */
  readonly set?: Readonly<Record<string, string>>;
  readonly reason?: string;
  readonly reviewer: string;
  /** The reviewer's Ed25519 private key: the decision is signed (required by some rules). */
  readonly signingKey?: KeyObject;
  /**
   * Without `signingKey`: where a key was looked for and how to get one. A
   * request that needs a signed decision is then refused here, unsent.
   */
  readonly noKeyAdvice?: string;
  /**
   * Approve only, signed only: the approval also stands for later calls of
   * the same operation, for this long and this many uses (within what the
   * request's rules allow).
   */
  readonly standing?: { readonly forMs: number; readonly uses: number };
  /** How long to wait for an agent worker to take the decision (default `WORKER_WAIT_MS`). */
  readonly workerWaitMs?: number;
  /**
   * The call the decider means to decide (`airlock undo` signing its own
   * undo): a request for anything else is refused here, unsigned, as
   * `not_the_expected_call`.
   */
  readonly expect?: {
    readonly toolName: string;
    readonly args: Readonly<Record<string, unknown>>;
    /** What the card says that the decider has not seen (why a person must read it first): then nothing is signed, as `needs_a_person`. */
    readonly unseen?: (request: PendingRequestView) => string | undefined;
  };
}

export type DecideOutcome =
  | {
      readonly accepted: true;
      readonly jobId: string;
      readonly requestId: string;
      readonly status: 'approved' | 'denied';
      readonly editedFingerprint: string | null;
      /** What was decided, as the reviewer saw it (absent when the payload was sent as is). */
      readonly call?: { readonly toolName: string; readonly args: unknown };
      /** Fields an approval edited: the value as requested and as approved (masked). */
      readonly edits?: ReadonlyArray<{ readonly field: string; readonly before: unknown; readonly after: unknown }>;
      /** The standing approval the approval asked for: kept, or why not. */
      readonly standing?: DecideResult['standing'];
    }
  | { readonly accepted: false; readonly jobId: string; readonly requestId: string; readonly code: string; readonly reason: string }
  /**
   * No agent worker took the decision in time: it was sent as a signal,
   * which the server keeps, and the job applies (or rejects and audits) it
   * when an agent worker runs again.
   */
  | {
      readonly accepted: 'queued';
      readonly jobId: string;
      readonly requestId: string;
      readonly reason: string;
      /** When a worker last polled the agent queue, as the server remembers it (it forgets after a few minutes). */
      readonly lastAgentPoll: string | null;
    };

/**
 * Approves or denies one pending request by the `decide` update, binding
 * the decision to the request's fingerprint and nonce as the reviewer saw
 * them. A rejection is also sent as a signal, so the job audits it.
 */
export async function decide(client: Client, jobId: string, options: DecideOptions): Promise<DecideOutcome> {
  const found = await pendingOf(client, jobId);
  const cli = options.cli ?? 'npx airlock';
  if (found.execution !== 'RUNNING') throw new JobError(closedJobMessage(jobId, found.status, cli));
  const request = pickRequest(jobId, found, options.requestId, cli);
  const expected = options.expect;
  // The signature binds the request's fingerprint: it must be that of exactly the expected call (shown arguments are masked, and could match another).
  if (expected !== undefined && request.fingerprint !== callFingerprint({ jobId, scope: {}, toolName: expected.toolName, normalizedArgs: expected.args, ruleId: request.ruleId, ruleVersion: request.ruleVersion })) {
    const reason = `request ${request.requestId} of job ${jobId} (${request.toolName} ${JSON.stringify(request.args)}) is not the ${expected.toolName} ${JSON.stringify(maskValue(expected.args))} meant; nothing was signed`;
    return { accepted: false, jobId, requestId: request.requestId, code: 'not_the_expected_call', reason };
  }
  const unseen = expected?.unseen?.(request);
  if (unseen !== undefined) return { accepted: false, jobId, requestId: request.requestId, code: 'needs_a_person', reason: unseen };
  const edited = options.set !== undefined && Object.keys(options.set).length > 0 ? coerceEdits(request.toolName, options.set) : undefined;
  // What the job would refuse for sure is refused here, before anything is sent or signed.
  const refused = edited === undefined ? undefined : editProblem(request.toolName, request.editable, edited);
  if (refused !== undefined) return { accepted: false, jobId, requestId: request.requestId, ...refused };
  // What the job would reject for who decides is said here, unsent: the reviewer's name, the requester, a missing signature.
  const decider = deciderProblem(request, options.reviewer.trim());
  if (decider !== undefined) return { accepted: false, jobId, requestId: request.requestId, code: decider.code, reason: decider.message };
  if (request.signatureRequired === true && options.signingKey === undefined) {
    const reason = `request ${request.requestId} needs a signed decision and there is no signing key for reviewer ${options.reviewer.trim()}${options.noKeyAdvice !== undefined ? `: ${options.noKeyAdvice}` : ''}`;
    return { accepted: false, jobId, requestId: request.requestId, code: 'signature_required', reason };
  }
  const standing = options.standing === undefined ? undefined : { until: Date.now() + options.standing.forMs, uses: options.standing.uses };
  if (standing !== undefined) {
    const refusal = standingRefusal(request, options, standing, cli);
    if (refusal !== undefined) return { accepted: false, jobId, requestId: request.requestId, ...refusal };
  }
  const unsigned: DecisionPayload = {
    requestId: request.requestId,
    fingerprint: request.fingerprint,
    nonce: request.nonce,
    decision: options.decision,
    // Trimmed as the job's schema trims it, so the signed text is the text the job verifies.
    reviewer: options.reviewer.trim(),
    ...(options.reason !== undefined ? { reason: options.reason } : {}),
    ...(edited !== undefined ? { args: edited } : {}),
    ...(standing !== undefined ? { standing } : {}),
  };
  const payload =
    options.signingKey === undefined
      ? unsigned
      : { ...unsigned, signature: sign(null, Buffer.from(decisionSigningText(jobId, unsigned)), options.signingKey).toString('base64') };
  const outcome = await sendDecision(client, jobId, payload, options.workerWaitMs);
  if (outcome.accepted !== true) return outcome;
  const edits = Object.entries(payload.args ?? {}).map(([field, after]) => ({ field, before: argAt(request.args, field), after: maskValue(after) }));
  return { ...outcome, call: { toolName: request.toolName, args: request.args }, ...(edits.length > 0 ? { edits } : {}) };
}

/** What the job would refuse of a standing approval, said before anything is signed or sent. */
function standingRefusal(request: PendingRequestView, options: DecideOptions, ask: StandingAsk, cli: CliName): { code: string; reason: string } | undefined {
  const of = `request ${request.requestId}`;
  if (options.decision !== 'approve') return { code: 'standing_not_allowed', reason: 'only an approval can stand for later calls' };
  if (options.set !== undefined && Object.keys(options.set).length > 0) return { code: 'standing_not_allowed', reason: 'a standing approval covers the call as proposed: approve the edit without --also-for' };
  const problem = standingAskProblem(request.standing, ask, Date.now());
  if (problem !== undefined) return { code: 'standing_not_allowed', reason: `${of}: ${problem}` };
  if (options.signingKey === undefined) {
    return { code: 'standing_unsigned', reason: `${of}: a standing approval must be signed and there is no signing key for reviewer ${options.reviewer.trim()}${options.noKeyAdvice !== undefined ? `: ${options.noKeyAdvice}` : ` (\`${cli} reviewer add\`)`}` };
  }
  return undefined;
}

/** The latest poll of the agent task queue the server remembers, ISO time, or null. */
export async function lastAgentPoll(client: Client): Promise<string | null> {
  const response = await client.workflowService.describeTaskQueue({
    namespace: client.options.namespace,
    taskQueue: { name: TaskQueues.agent, kind: temporal.api.enums.v1.TaskQueueKind.TASK_QUEUE_KIND_NORMAL },
    taskQueueType: temporal.api.enums.v1.TaskQueueType.TASK_QUEUE_TYPE_WORKFLOW,
  });
  const times = (response.pollers ?? []).flatMap((p) => {
    const at = p.lastAccessTime;
    return at?.seconds == null ? [] : [Number(at.seconds) * 1000 + Math.floor((at.nanos ?? 0) / 1e6)];
  });
  return times.length === 0 ? null : new Date(Math.max(...times)).toISOString();
}

/** Sends a complete payload; used by `decide` and by tests that craft payloads. */
export async function sendDecision(client: Client, jobId: string, payload: DecisionPayload, workerWaitMs = WORKER_WAIT_MS): Promise<DecideOutcome> {
  const handle = client.workflow.getHandle(jobId);
  try {
    // An update needs a worker to accept it, and one only admitted is not durable: wait a bounded time.
    const update = await client.withDeadline(Date.now() + workerWaitMs, () =>
      handle.startUpdate(decideUpdate, { args: [payload], waitForStage: WorkflowUpdateStage.ACCEPTED }),
    );
    const result = await update.result();
    return { accepted: true, jobId, ...result };
  } catch (err) {
    if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError) {
      // A signal is kept by the server until a worker runs the job. Should the admitted update be delivered
      // too, the second of the two is rejected by the job as already decided (and audited).
      await handle.signal(approvalDecisionSignal, payload);
      const lastPoll = await lastAgentPoll(client);
      const since = lastPoll === null ? 'no agent worker has polled recently' : `an agent worker last polled at ${lastPoll}`;
      return {
        accepted: 'queued',
        jobId,
        requestId: payload.requestId,
        lastAgentPoll: lastPoll,
        reason: `no agent worker took the decision within ${workerWaitMs / 1000} s (${since}); it was sent and will be applied, or rejected and audited, when an agent worker runs the job`,
      };
    }
    const cause = err instanceof WorkflowUpdateFailedError ? err.cause : undefined;
    if (cause instanceof ApplicationFailure && cause.type === FailureTypes.DecisionRejected) {
      const [code, stage] = Array.isArray(cause.details) ? cause.details : [];
      // A validator rejection leaves no trace in history: report it so the job audits it.
      if (stage === 'validator') await handle.signal(decisionRejectedSignal, reportedRejection(payload));
      return { accepted: false, jobId, requestId: payload.requestId, code: typeof code === 'string' ? code : 'rejected', reason: cause.message };
    }
    throw err;
  }
}

/** Larger than any valid decision (edits included): reported by its ids only, so history does not keep it. */
const REPORTED_PAYLOAD_LIMIT = 64 * 1024;

/**
 * What the client reports of a decision the validator rejected. An
 * oversized one (a megabyte field) is reported by request and reviewer
 * alone, which the job audits as an invalid payload: the rejection is
 * recorded without keeping the megabyte in the job's history.
 */
export function reportedRejection(payload: DecisionPayload): unknown {
  if (JSON.stringify(payload).length <= REPORTED_PAYLOAD_LIMIT) return payload;
  const short = (value: unknown) => (typeof value === 'string' ? value.slice(0, 200) : undefined);
  return { requestId: short(payload.requestId), reviewer: short(payload.reviewer), oversized: true };
}

/**
 * The job's own first checks of an edit, made before sending: fields the
 * rule (or the tool) does not let a reviewer edit, and values the field's
 * schema refuses. The job checks the whole edited call again.
 */
export function editProblem(toolName: string, editable: readonly string[], edits: Readonly<Record<string, unknown>>): { code: string; reason: string } | undefined {
  const outside = editOutsideRule(toolName, editable, Object.keys(edits));
  if (outside !== undefined) return { code: outside.code, reason: outside.message };
  const shape = (getTool(toolName)?.parameters as { shape?: Record<string, ZodType> } | undefined)?.shape ?? {};
  for (const [field, value] of Object.entries(edits)) {
    const checked = shape[field]?.safeParse(value);
    if (checked !== undefined && !checked.success) return { code: 'edit_invalid', reason: `edited call is invalid: ${field}: ${checked.error.issues[0]?.message ?? 'invalid value'} (got ${JSON.stringify(value)})` };
  }
  return undefined;
}

/**
 * Command-line values are text; a field whose schema wants a number or a
 * boolean gets one. Anything that fits neither stays text, and the job's own
 * check explains what is wrong with it.
 */
export function coerceEdits(toolName: string, set: Readonly<Record<string, string>>): Record<string, unknown> {
  const shape = (getTool(toolName)?.parameters as { shape?: Record<string, ZodType> } | undefined)?.shape ?? {};
  const out: Record<string, unknown> = {};
  for (const [field, raw] of Object.entries(set)) {
    const schema = shape[field];
    let value: unknown = raw;
    if (schema !== undefined && !schema.safeParse(raw).success) {
      try {
        const typed: unknown = JSON.parse(raw);
        if (schema.safeParse(typed).success) value = typed;
      } catch {
        // Not JSON: keep the text.
      }
    }
    out[field] = value;
  }
  return out;
}

const closedWords: Partial<Record<ShownStatus, string>> = {
  cancelled: 'was cancelled',
  terminated: 'was terminated',
  timed_out: 'timed out',
  completed: 'has completed',
  aborted: 'was aborted',
  failed: 'has failed',
};

/** Why a closed job takes no decision, in one line. */
export function closedJobMessage(jobId: string, status: ShownStatus, cli: CliName = 'npx airlock'): string {
  return `job ${jobId} ${closedWords[status] ?? `is ${status}`}; there is nothing left to approve or deny (see \`${cli} show ${jobId}\`)`;
}

function pickRequest(
  jobId: string,
  state: { readonly status: string; readonly pending: readonly PendingRequestView[] },
  requestId: string | undefined,
  cli: CliName,
): PendingRequestView {
  if (requestId !== undefined) {
    // The full id, or a prefix that names one request (the `pending` table shows the first characters).
    const prefixed = requestId.length >= 4 ? state.pending.filter((r) => r.requestId.startsWith(requestId)) : [];
    const found = state.pending.find((r) => r.requestId === requestId) ?? (prefixed.length === 1 ? prefixed[0] : undefined);
    if (found === undefined) {
      throw new JobError(`job ${jobId} has no pending request ${requestId}; see \`${cli} show ${jobId}\``);
    }
    return found;
  }
  if (state.pending.length === 0) throw new JobError(`job ${jobId} has no pending approval request (status: ${state.status})`);
  if (state.pending.length > 1) {
    throw new JobError(
      `job ${jobId} has ${state.pending.length} pending requests; choose one with --request (${state.pending.map((r) => `${r.requestId} ${r.toolName}`).join(', ')})`,
    );
  }
  return state.pending[0]!;
}
