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
import { contentPreviewSchema } from '../tools/content-preview';
import { observedStateSchema } from '../tools/observed-state';
import { reversibilitySchema } from '../tools/undo';
import { standingAskSchema, standingMarkSchema, standingSettingsSchema } from './standing';

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

export const argsRecord = z.record(z.string(), z.unknown());

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
  /** What a standing approval of this call may be, when every gating rule allows one (absent: none, and in requests of builds before). */
  standing: standingSettingsSchema.optional(),
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
  /** The approval made a standing approval, or the call ran under one (then no person decided it now). */
  standing: standingMarkSchema.optional(),
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
  /** Only with a signed approve: also approve later calls of the same operation, until then and this many times. */
  standing: standingAskSchema.optional(),
});
export type DecisionPayload = z.infer<typeof decisionPayloadSchema>;
