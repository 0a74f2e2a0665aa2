/**
 * core/approval/ — A parked call and its decision: the fingerprint that
 * names one exact call, the approval request, the reviewer's decision
 * payload and what it signs (the Ed25519 text, the passkey challenge), the
 * grant that lets one exact call run once, and the approval card's record
 * shape.
 *
 * May import: util, tools, policy.
 */

import { z } from 'zod';
import { canonicalJson } from '../util/canonical-json';
import { callFingerprint } from './fingerprint';
import { observedStateSchema } from '../tools/observed-state';
import type { JobScope } from '../policy/rules';
import { contentPreviewSchema } from '../tools/content-preview';
import { reversibilitySchema } from '../tools/undo';
import { canonicalArgs, getTool } from '../tools/registry';

const hex64 = z.string().regex(/^[0-9a-f]{64}$/, 'expected a 64-character hex fingerprint');
const hex32 = z.string().regex(/^[0-9a-f]{32}$/, 'expected a 32-character hex nonce');

export type ApprovalStatus = ApprovalRequest['status'];

const KEPT_ARG_CHARS = 1_000;

/**
 * A decided request as the job keeps it for `airlock show`: long argument
 * texts shortened (a megabyte write must not ride along for weeks), the
 * rest as decided.
 */
export function slimmed(request: ApprovalRequest): ApprovalRequest {
  const args = Object.fromEntries(
    Object.entries(request.args).map(([k, v]) => [k, typeof v === 'string' && v.length > KEPT_ARG_CHARS ? `${v.slice(0, KEPT_ARG_CHARS)}… (${v.length - KEPT_ARG_CHARS} more characters)` : v]),
  );
  // The preview is for deciding; a decided request keeps the call, not the diff.
  const { preview: _preview, ...kept } = request;
  return { ...kept, args };
}

const argsRecord = z.record(z.string(), z.unknown());

const requestFields = {
  requestId: z.string().min(1),
  callId: z.string().min(1),
  toolName: z.string(),
  /** Normalized arguments of the call as proposed. */
  args: argsRecord,
  fingerprint: hex64,
  nonce: hex32,
  ruleId: z.string(),
  ruleVersion: z.number().int(),
  /** Why it needs approval: the rule's name and instruction. */
  reason: z.string(),
  editable: z.array(z.string()),
  /** null: anyone may decide. */
  reviewers: z.array(z.string()).nullable(),
  separateRequester: z.boolean(),
  /** Decisions must be signed by the reviewer's key (verified in an activity). */
  signatureRequired: z.boolean(),
  requester: z.string(),
  observed: z.array(observedStateSchema),
  /** What a write would change in the file's content, as the tools side saw it when the call parked (absent for other tools and from builds before). */
  preview: contentPreviewSchema.optional(),
  /** The machine the call runs on, when the tools config lists several (absent: one machine). */
  machine: z.string().optional(),
  /** Whether the change can be undone, as the card said (absent for tools that keep nothing, and from builds before). */
  undo: reversibilitySchema.optional(),
  createdAt: z.number(),
  expiresAt: z.number(),
};

const decisionFields = { reviewer: z.string(), reason: z.string().nullable(), decidedAt: z.number() };

export const approvalSchema = z.strictObject({
  decision: z.literal('approve'),
  ...decisionFields,
  /** Set when the reviewer edited the call: what will run, and its fingerprint. */
  editedArgs: argsRecord.nullable(),
  editedFingerprint: hex64.nullable(),
});
export const denialSchema = z.strictObject({
  decision: z.literal('deny'),
  ...decisionFields,
  /** Ended by an operator, not decided by a reviewer (`withdrawRequests`): `reviewer` is who withdrew it. Absent: a reviewer's denial. */
  withdrawn: z.literal(true).optional(),
});

/** What `withdrawRequests` carries: who withdraws the job's waiting requests, and why. */
export const withdrawInputSchema = z.strictObject({
  by: z.string().trim().min(1, 'by must name who withdraws').max(200),
  reason: z.string().trim().min(1, 'give a reason').max(2000),
});
export type WithdrawInput = z.infer<typeof withdrawInputSchema>;
/** What `withdrawRequests` answers: the requests it ended, and the calls whose requests end as soon as they park. */
export const withdrawResultSchema = z.strictObject({ withdrawn: z.array(z.string()), calls: z.array(z.string()).optional() });
export type WithdrawResult = z.infer<typeof withdrawResultSchema>;

/**
 * A parked call. Persisted in workflow state and carried across
 * continue-as-new; the decision is present exactly when it was decided.
 */
export const approvalRequestSchema = z.discriminatedUnion('status', [
  z.strictObject({ ...requestFields, status: z.literal('pending') }),
  z.strictObject({ ...requestFields, status: z.literal('approved'), decision: approvalSchema }),
  z.strictObject({ ...requestFields, status: z.literal('denied'), decision: denialSchema }),
  z.strictObject({ ...requestFields, status: z.literal('expired') }),
]);
export type ApprovalRequest = z.infer<typeof approvalRequestSchema>;
export type PendingRequest = Extract<ApprovalRequest, { status: 'pending' }>;
export type Approval = z.infer<typeof approvalSchema>;
export type Denial = z.infer<typeof denialSchema>;

const base64url = (max: number) => z.string().min(1).max(max).regex(/^[A-Za-z0-9_-]+$/, 'expected base64url');

/**
 * A WebAuthn assertion by a reviewer's passkey whose challenge is
 * `decisionChallenge` of the decision it travels with (verified in an
 * activity against the passkeys in the reviewer keys file).
 */
export const passkeyAssertionSchema = z.strictObject({
  credentialId: base64url(1_400),
  authenticatorData: base64url(4_000),
  clientDataJSON: base64url(4_000),
  signature: base64url(1_400),
  userHandle: base64url(200).optional(),
});
export type PasskeyAssertion = z.infer<typeof passkeyAssertionSchema>;

/** What a reviewer sends, by signal `approvalDecision` or update `decide`. */
export const decisionPayloadSchema = z.strictObject({
  requestId: z.string().min(1).max(200),
  fingerprint: hex64,
  nonce: hex32,
  decision: z.enum(['approve', 'deny']),
  /** Only with approve: new values for the rule's editable fields, by field name. */
  args: argsRecord.optional(),
  reviewer: z.string().trim().min(1, 'reviewer must not be empty').max(200),
  reason: z.string().max(2000).optional(),
  /** Ed25519 by the reviewer's key over `decisionSigningText`, base64. */
  signature: z.string().min(1).max(200).optional(),
  /** Or: an assertion by one of the reviewer's passkeys over the same decision. */
  passkey: passkeyAssertionSchema.optional(),
});
export type DecisionPayload = z.infer<typeof decisionPayloadSchema>;

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
  });
}
