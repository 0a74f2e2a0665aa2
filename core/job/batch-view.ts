import { z } from 'zod';
import type { ApprovalRequest } from '../approval/approvals';
import type { PlannedCall } from './plan-schema';
import type { ParkedBatch } from './carried-state';
import { maskPreview, summarizeArgs } from '../redaction/masking';
import { getTool } from '../tools/registry';

/** The model's stated reason is shown up to this length (masked). */
export const STATED_REASON_CHARS = 1_000;
/** What a parked batch keeps of the assistant text that proposed it; longer text is cut. */
export const KEPT_STATED_REASON_CHARS = 8_000;

/** One call of a parked batch as a reviewer sees it beside the one they decide. */
export const batchCallViewSchema = z.object({
  callId: z.string(),
  toolName: z.string(),
  /** Masked: the paths it acts on, else its arguments in short. */
  target: z.string(),
  /** What happens to it, in words ("allowed", "waiting for approval", "denied by rule x", …). */
  decision: z.string(),
  /** Set for a call that is itself an approval request. */
  requestId: z.string().nullable(),
});
export type BatchCallView = z.infer<typeof batchCallViewSchema>;

/** The batch a job is parked on, as `show`, `pending` and the Web UI card show it. */
export const parkedBatchViewSchema = z.object({
  /** The assistant text of the turn that proposed the batch, masked; null when the model said nothing. */
  statedReason: z.string().nullable(),
  calls: z.array(batchCallViewSchema),
});
export type ParkedBatchView = z.infer<typeof parkedBatchViewSchema>;

/** The paths a call acts on, masked, or its arguments in short when it names none. */
export function callTarget(toolName: string, args: Record<string, unknown>): string {
  let paths: string[] = [];
  try {
    paths = getTool(toolName)?.targets(args) ?? [];
  } catch {
    // Arguments a tool cannot read: shown as they are.
  }
  return paths.length > 0 ? paths.map((p) => maskPreview(p, 200)).join(' → ') : summarizeArgs(args, 120);
}

const requestDecision: Record<ApprovalRequest['status'], string> = {
  pending: 'waiting for approval',
  approved: 'approved',
  denied: 'denied',
  expired: 'expired (denied)',
};

function decisionOf(p: PlannedCall, parked: ParkedBatch): { readonly decision: string; readonly requestId: string | null } {
  switch (p.kind) {
    case 'run':
      return { decision: 'allowed (runs once the batch is decided)', requestId: null };
    case 'deny':
      return { decision: p.ruleId !== null ? `denied by rule ${p.ruleId}` : 'denied', requestId: null };
    case 'redirect':
      return { decision: `sent back to the model by rule ${p.ruleId}`, requestId: null };
    case 'stop':
      return { decision: `stops the job (rule ${p.ruleId})`, requestId: null };
    case 'approval': {
      const request = parked.requests.find((r) => r.callId === p.call.callId);
      if (request !== undefined) return { decision: `${requestDecision[request.status]} (rule ${p.ruleId})`, requestId: request.requestId };
      const failure = parked.prepareFailures.find((f) => f.callId === p.call.callId);
      return { decision: `not run: its target could not be observed${failure !== undefined ? ` (${maskPreview(failure.reason, 200)})` : ''}`, requestId: null };
    }
    case 'complete':
    case 'complete_held':
    case 'complete_rejected':
      return { decision: 'completion, considered once the batch is decided', requestId: null };
    case 'error':
      return { decision: `invalid call: ${maskPreview(p.call.message, 200)}`, requestId: null };
  }
}

/** Every call of the parked batch with what happens to it, and the model's own words for proposing it. */
export function parkedBatchView(parked: ParkedBatch): ParkedBatchView {
  const stated = parked.statedReason?.trim() ?? '';
  return {
    statedReason: stated === '' ? null : maskPreview(stated, STATED_REASON_CHARS),
    calls: parked.plan.calls.map((p) => ({
      callId: p.call.callId,
      toolName: p.call.toolName,
      target: p.call.kind === 'tool' ? callTarget(p.call.toolName, p.call.args) : '',
      ...decisionOf(p, parked),
    })),
  };
}
