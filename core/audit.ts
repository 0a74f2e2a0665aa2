import { maskString, maskValue, truncate } from './masking';

export const auditEventTypes = [
  'policy_evaluation',
  'policy_rule_matched',
  'policy_instruction_injected',
  'policy_tool_denied',
  'approval_requested',
  'approval_decided',
  'approval_fingerprint_mismatch',
  'approval_expired',
  'policy_task_stopped',
  'tool_executed',
  'runtime_error',
  'judge_result',
  'policy_notification_queued',
] as const;
export type AuditEventType = (typeof auditEventTypes)[number];

/**
 * Fields an audit event may carry. Anything else is dropped before writing:
 * never full conversations, never raw arguments beyond a masked summary.
 */
const allowedFields = new Set([
  'toolName',
  'category',
  'callId',
  'ruleId',
  'ruleVersion',
  'action',
  'decision',
  'shadow',
  'requestId',
  'fingerprint',
  'originalFingerprint',
  'editedFingerprint',
  'reviewer',
  'requester',
  'reason',
  'code',
  'outcome',
  'executed',
  'ok',
  'error',
  'turn',
  'instructions',
  'argsSummary',
  'expiresAt',
  'status',
  'detail',
  'replayed',
  'model',
  'result',
  'confidence',
  'latencyMs',
  'cached',
  'enforced',
  'detectors',
  'via',
]);

export interface AuditEvent {
  readonly type: AuditEventType;
  readonly jobId: string;
  /** Workflow time, ISO 8601. */
  readonly at: string;
  readonly policyVersion: string | undefined;
  readonly data: Readonly<Record<string, unknown>>;
}

const MAX_FIELD_TEXT = 2000;

/** Drops fields outside the allowlist, masks secrets and bounds sizes. */
export function sanitizeAuditEvent(event: AuditEvent): AuditEvent {
  const data: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(event.data)) {
    if (!allowedFields.has(key) || value === undefined) continue;
    const masked = maskValue(value);
    data[key] = typeof masked === 'string' ? truncate(masked, MAX_FIELD_TEXT) : masked;
  }
  return { ...event, jobId: maskString(event.jobId), data };
}

/** A short, masked, one-line view of a call's arguments for audit and reviewers. */
export function summarizeArgs(args: unknown, max = 300): string {
  return truncate(JSON.stringify(maskValue(args)) ?? '', max);
}
