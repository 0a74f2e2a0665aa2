import { existsSync } from 'node:fs';
import { z } from 'zod';
import { decisionPayloadSchema, passkeyAssertionSchema, type DecisionPayload } from '../../core/approval/approvals';
import { decisionChallenge } from '../../core/approval/decision-challenge';
import { maskString, maskValue } from '../../core/redaction/masking';
import { argAt } from '../../core/policy/conditions';
import { readReviewerKeysFile, type ReviewerPasskey } from '../../host/keys/reviewer-keys-file';
import { closedJobMessage, coerceEdits, type DecideOutcome } from '../../client/airlock-client';
import { HttpError } from '../http/guard';
import type { InboxSite } from './site';
import type { TemporalLink } from './temporal-link';

/** How long the browser's passkey prompt may stay open. */
const PROMPT_TIMEOUT_MS = 120_000;

const b64url = z.string().min(1).max(4_000).regex(/^[A-Za-z0-9_-]+$/, 'expected base64url');

/** What the page asks to sign: the decision as the reviewer chose it. */
export const decisionRequestSchema = z.strictObject({
  jobId: z.string().min(1).max(300),
  requestId: z.string().min(1).max(200),
  decision: z.enum(['approve', 'deny']),
  reviewer: z.string().trim().min(1, 'reviewer must not be empty').max(200),
  reason: z.string().trim().max(2000).optional(),
  /** New values of editable fields as typed (text); coerced as `airlock approve --set` does. */
  args: z.record(z.string().max(200), z.string().max(10_000)).optional(),
});

/** The decision as signed: everything but the proof. */
const unsignedPayloadSchema = decisionPayloadSchema.omit({ signature: true, passkey: true });

/** The browser's `startAuthentication` answer (AuthenticationResponseJSON). */
export const authenticationResponseSchema = z.object({
  id: b64url,
  rawId: b64url,
  type: z.literal('public-key'),
  response: z.object({ clientDataJSON: b64url, authenticatorData: b64url, signature: b64url, userHandle: b64url.optional() }),
});

export const decisionSubmitSchema = z.strictObject({
  jobId: z.string().min(1).max(300),
  payload: unsignedPayloadSchema,
  response: authenticationResponseSchema,
});

/** A body that does not parse: 400 with its first problem. */
export function parseBody<T>(schema: z.ZodType<T>, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (parsed.success) return parsed.data;
  const issue = parsed.error.issues[0];
  throw new HttpError(400, `invalid request: ${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'}`);
}

/** A reviewer's passkeys for this site (the keys file as the agent workers read it). */
export function sitePasskeys(keysFile: string, reviewer: string, site: InboxSite): { readonly all: readonly ReviewerPasskey[]; readonly here: readonly ReviewerPasskey[] } {
  const all = existsSync(keysFile) ? (readReviewerKeysFile(keysFile)[reviewer]?.passkeys ?? []) : [];
  return { all, here: all.filter((p) => p.rpId === site.rpId && p.origin === site.origin) };
}

export interface PreparedDecision {
  readonly payload: Omit<DecisionPayload, 'signature' | 'passkey'>;
  /** PublicKeyCredentialRequestOptionsJSON: the challenge is the decision's own. */
  readonly options: {
    readonly challenge: string;
    readonly rpId: string;
    readonly allowCredentials: ReadonlyArray<{ readonly id: string; readonly type: 'public-key'; readonly transports?: readonly string[] }>;
    readonly userVerification: 'required';
    readonly timeout: number;
  };
  /** What the reviewer is about to sign, in words (masked). */
  readonly summary: readonly string[];
}

/**
 * Builds the decision from the request as the job holds it now (its
 * fingerprint and nonce), and the WebAuthn options whose challenge is
 * `decisionChallenge` of exactly that decision.
 */
export async function prepareDecision(
  deps: { readonly temporal: TemporalLink; readonly site: InboxSite; readonly keysFile: string },
  body: unknown,
): Promise<PreparedDecision> {
  const input = parseBody(decisionRequestSchema, body);
  const edits = input.args !== undefined && Object.keys(input.args).length > 0 ? input.args : undefined;
  if (input.decision === 'deny' && edits !== undefined) throw new HttpError(400, 'a denial cannot carry edited fields');
  if (input.decision === 'deny' && (input.reason ?? '') === '') throw new HttpError(400, 'say why you deny it: the model is told the reason');
  const found = await deps.temporal.use((c) => c.pendingOf(input.jobId));
  if (found.execution !== 'RUNNING') throw new HttpError(409, closedJobMessage(input.jobId, found.status));
  const request = found.pending.find((r) => r.requestId === input.requestId);
  if (request === undefined) throw new HttpError(409, `request ${input.requestId} of job ${input.jobId} is not waiting any more: it was decided elsewhere or expired`);
  if (request.reviewers !== null && !request.reviewers.includes(input.reviewer)) {
    throw new HttpError(403, `reviewer ${input.reviewer} may not decide this request (allowed: ${request.reviewers.join(', ') || 'nobody'})`);
  }
  const passkeys = sitePasskeys(deps.keysFile, input.reviewer, deps.site);
  if (passkeys.here.length === 0) {
    const elsewhere = passkeys.all.length > 0 ? ` (their passkeys were registered on another address: ${[...new Set(passkeys.all.map((p) => p.origin))].join(', ')})` : '';
    throw new HttpError(
      400,
      `reviewer ${input.reviewer} has no passkey for ${deps.site.origin}${elsewhere}; run \`airlock reviewer add ${input.reviewer} --passkey\` and open the link it prints`,
    );
  }
  const payload = unsignedPayloadSchema.parse({
    requestId: request.requestId,
    fingerprint: request.fingerprint,
    nonce: request.nonce,
    decision: input.decision,
    reviewer: input.reviewer,
    ...(input.reason !== undefined && input.reason !== '' ? { reason: input.reason } : {}),
    ...(input.decision === 'approve' && edits !== undefined ? { args: coerceEdits(request.toolName, edits) } : {}),
  });
  const summary = [
    `${payload.decision} ${request.toolName} as ${payload.reviewer}`,
    ...Object.entries(payload.args ?? {}).map(([field, after]) => `${field}: ${JSON.stringify(maskValue(argAt(request.args, field)))} → ${JSON.stringify(maskValue(after))}`),
    ...(payload.reason !== undefined ? [`reason: ${maskString(payload.reason)}`] : []),
  ];
  return {
    payload,
    options: {
      challenge: decisionChallenge(input.jobId, payload),
      rpId: deps.site.rpId,
      allowCredentials: passkeys.here.map((p) => ({ id: p.id, type: 'public-key' as const, ...(p.transports !== undefined ? { transports: p.transports } : {}) })),
      userVerification: 'required',
      timeout: PROMPT_TIMEOUT_MS,
    },
    summary,
  };
}

/**
 * Sends the decision with the browser's assertion attached. The server
 * does not judge the assertion: the job verifies it in an activity, and
 * audits every rejection.
 */
export async function submitDecision(deps: { readonly temporal: TemporalLink; readonly admit?: (jobId: string) => void }, body: unknown): Promise<DecideOutcome> {
  const input = parseBody(decisionSubmitSchema, body);
  const { response } = input.response;
  if (input.response.id !== input.response.rawId) throw new HttpError(400, 'invalid request: response: id and rawId differ');
  const passkey = passkeyAssertionSchema.safeParse({
    credentialId: input.response.id,
    authenticatorData: response.authenticatorData,
    clientDataJSON: response.clientDataJSON,
    signature: response.signature,
    ...(response.userHandle !== undefined ? { userHandle: response.userHandle } : {}),
  });
  if (!passkey.success) throw new HttpError(400, `invalid request: response: ${passkey.error.issues[0]?.message ?? 'invalid'}`);
  deps.admit?.(input.jobId);
  return deps.temporal.use((c) => c.sendDecision(input.jobId, { ...input.payload, passkey: passkey.data }));
}
