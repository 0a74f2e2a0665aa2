import type { JobScope } from '../policy/rules';
import { canonicalArgs, getTool } from '../tools/registry';
import { canonicalJson } from '../util/canonical-json';
import { argsRecord, type ApprovalRequest, type DecisionPayload, type PendingRequest, decisionPayloadSchema } from './approvals';
import { callFingerprint } from './fingerprint';
import { standingAskProblem } from './standing';

export const decisionRejectionCodes = [
  'invalid_payload',
  'unknown_request',
  'fingerprint_mismatch',
  'nonce_mismatch',
  'already_decided',
  'expired',
  'edit_on_deny',
  'edit_not_allowed',
  'edit_invalid',
  'reviewer_not_allowed',
  'requester_cannot_decide',
  'signature_required',
  'signature_invalid',
  'standing_not_allowed',
  'standing_unsigned',
] as const;
export type DecisionRejectionCode = (typeof decisionRejectionCodes)[number];

/** Rejections that mean "this decision is not about a request we hold": audited as a mismatch. */
export const mismatchCodes: ReadonlySet<DecisionRejectionCode> = new Set([
  'unknown_request',
  'fingerprint_mismatch',
  'nonce_mismatch',
]);

export type DecisionCheck =
  | {
      readonly ok: true;
      readonly payload: DecisionPayload;
      readonly request: PendingRequest;
      /** Present when the approval edits the call. */
      readonly edit: { readonly args: Record<string, unknown>; readonly fingerprint: string } | undefined;
    }
  | {
      readonly ok: false;
      readonly code: DecisionRejectionCode;
      readonly message: string;
      readonly requestId: string | undefined;
      readonly reviewer: string | undefined;
    };

export interface DecisionContext {
  readonly jobId: string;
  readonly scope: JobScope;
  readonly now: number;
  /** For the canonical spelling of edited paths (the job's snapshot roots). */
  readonly roots?: readonly string[];
}

function reject(
  code: DecisionRejectionCode,
  message: string,
  raw: unknown,
): Extract<DecisionCheck, { ok: false }> {
  const field = (name: string) => {
    const value = isRecord(raw) ? raw[name] : undefined;
    return typeof value === 'string' ? value.slice(0, 200) : undefined;
  };
  return { ok: false, code, message, requestId: field('requestId'), reviewer: field('reviewer') };
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

/** Sets a dotted field (`options.mode`), creating objects on the way. */
function setAt(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  const last = parts.pop();
  if (last === undefined) return;
  let cursor = target;
  for (const part of parts) {
    const next = cursor[part];
    const child: Record<string, unknown> = isRecord(next) ? next : {};
    cursor[part] = child;
    cursor = child;
  }
  cursor[last] = value;
}

/**
 * The one check behind both the signal and the update (whose validator
 * rejects exactly what this rejects). Pure: it never changes state.
 */
export function checkDecision(
  requests: readonly ApprovalRequest[],
  raw: unknown,
  ctx: DecisionContext,
): DecisionCheck {
  const parsed = decisionPayloadSchema.safeParse(raw);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    return reject('invalid_payload', `invalid decision: ${issue?.path.join('.') || 'payload'}: ${issue?.message ?? ''}`, raw);
  }
  const payload = parsed.data;
  if (payload.passkey !== undefined && payload.signature !== undefined) {
    return reject('invalid_payload', 'invalid decision: carry either a signature or a passkey assertion, not both', raw);
  }
  const request = requests.find((r) => r.requestId === payload.requestId);
  if (request === undefined) {
    return reject('unknown_request', `no approval request ${payload.requestId} in this job`, raw);
  }
  if (request.fingerprint !== payload.fingerprint) {
    return reject('fingerprint_mismatch', `fingerprint does not match request ${request.requestId}`, raw);
  }
  if (request.nonce !== payload.nonce) {
    return reject('nonce_mismatch', `nonce does not match request ${request.requestId}`, raw);
  }
  if (request.status !== 'pending') {
    return reject('already_decided', `request ${request.requestId} is already ${request.status}`, raw);
  }
  if (ctx.now >= request.expiresAt) {
    return reject('expired', `request ${request.requestId} has expired`, raw);
  }
  const decider = deciderProblem(request, payload.reviewer);
  if (decider !== undefined) return reject(decider.code, decider.message, raw);
  if (request.signatureRequired && payload.signature === undefined && payload.passkey === undefined) {
    return reject(
      'signature_required',
      `request ${request.requestId} needs a signed decision: airlock approve as a reviewer with a key (airlock reviewer add), or decide on the approval page with a passkey`,
      raw,
    );
  }
  if (payload.standing !== undefined) {
    const problem = standingProblem(request, payload, ctx.now);
    if (problem !== undefined) return reject(problem.code, problem.message, raw);
  }
  if (payload.args === undefined || Object.keys(payload.args).length === 0) {
    return { ok: true, payload, request, edit: undefined };
  }
  if (payload.decision === 'deny') {
    return reject('edit_on_deny', 'a denial cannot carry edited arguments', raw);
  }
  const outside = editOutsideRule(request.toolName, request.editable, Object.keys(payload.args));
  if (outside !== undefined) return reject(outside.code, outside.message, raw);
  const tool = getTool(request.toolName);
  if (tool === undefined) return reject('edit_invalid', `tool ${request.toolName} is no longer registered`, raw);
  const merged = argsRecord.parse(JSON.parse(JSON.stringify(request.args)));
  for (const [field, value] of Object.entries(payload.args)) setAt(merged, field, value);
  const checked = tool.parameters.safeParse(merged);
  if (!checked.success) {
    const issue = checked.error.issues[0];
    return reject('edit_invalid', `edited call is invalid: ${issue?.path.join('.') ?? ''}: ${issue?.message ?? ''}`, raw);
  }
  const args = canonicalArgs(tool, argsRecord.parse(checked.data), ctx.roots ?? []);
  if (canonicalJson(args) === canonicalJson(request.args)) return { ok: true, payload, request, edit: undefined };
  const fingerprint = callFingerprint({
    jobId: ctx.jobId,
    scope: ctx.scope,
    toolName: request.toolName,
    normalizedArgs: args,
    ruleId: request.ruleId,
    ruleVersion: request.ruleVersion,
  });
  return { ok: true, payload, request, edit: { args, fingerprint } };
}

/** A standing approval is asked only by a signed approval of the call as proposed, within what its rules allow. */
function standingProblem(request: PendingRequest, payload: DecisionPayload, now: number): { code: DecisionRejectionCode; message: string } | undefined {
  const ask = payload.standing;
  if (ask === undefined) return undefined;
  const of = `request ${request.requestId}`;
  if (payload.decision !== 'approve') return { code: 'standing_not_allowed', message: 'only an approval can stand for later calls' };
  if (payload.args !== undefined && Object.keys(payload.args).length > 0) {
    return { code: 'standing_not_allowed', message: 'a standing approval covers the call as proposed: approve the edit without --also-for' };
  }
  const problem = standingAskProblem(request.standing, ask, now);
  if (problem !== undefined) return { code: 'standing_not_allowed', message: `${of}: ${problem}` };
  if (payload.signature === undefined && payload.passkey === undefined) {
    return { code: 'standing_unsigned', message: `${of}: a standing approval must be signed (a reviewer key: airlock reviewer add, or a passkey on the approval page)` };
  }
  return undefined;
}

/** Who may not decide a request: a reviewer its rule does not name, or its requester when the rule keeps them apart. */
export function deciderProblem(
  request: { readonly reviewers: readonly string[] | null; readonly separateRequester?: boolean; readonly requester: string },
  reviewer: string,
): { readonly code: 'reviewer_not_allowed' | 'requester_cannot_decide'; readonly message: string } | undefined {
  if (request.reviewers !== null && !request.reviewers.includes(reviewer)) {
    return { code: 'reviewer_not_allowed', message: `reviewer ${reviewer} may not decide this request (allowed: ${request.reviewers.join(', ')})` };
  }
  if (request.separateRequester === true && reviewer === request.requester) {
    return { code: 'requester_cannot_decide', message: `the requester ${request.requester} may not decide their own request` };
  }
  return undefined;
}

/** Edited fields outside what the rule names, within what the tool allows at all (a service's name never is). */
export function editOutsideRule(toolName: string, editable: readonly string[], fields: readonly string[]): { readonly code: 'edit_not_allowed'; readonly message: string } | undefined {
  const tool = getTool(toolName);
  const allowed = editable.filter((field) => tool === undefined || tool.editable.includes(field.split('.')[0] ?? field));
  const outside = fields.filter((field) => !allowed.includes(field));
  if (outside.length === 0) return undefined;
  return { code: 'edit_not_allowed', message: `field(s) ${outside.join(', ')} are not editable (editable: ${allowed.length > 0 ? allowed.join(', ') : 'none'})` };
}

/**
 * What a reviewer signs: the decision and everything it binds, so a
 * signature cannot be moved to another job, request, call or edit. A
 * passkey signs its hash (`decisionChallenge`).
 */
export function decisionSigningText(jobId: string, payload: DecisionPayload): string {
  return canonicalJson({
    purpose: 'airlock-decision',
    jobId,
    requestId: payload.requestId,
    fingerprint: payload.fingerprint,
    nonce: payload.nonce,
    decision: payload.decision,
    args: payload.args ?? null,
    reviewer: payload.reviewer,
    reason: payload.reason ?? null,
    // Only when asked: a decision without one signs the very text it always did.
    ...(payload.standing !== undefined ? { standing: { until: payload.standing.until, uses: payload.standing.uses } } : {}),
  });
}
