import { z } from 'zod';
import type { ApprovalRequest } from '../approval/approvals';
import type { CallOutcome } from './carried-state';
import { requestTarget } from './approval-request';

/**
 * What a job knows happened to the calls that needed a reviewer, kept in
 * its result beside the model's own summary: a summary is the model's
 * words, these are the job's records. Every surface that tells how a job
 * ended leads with them.
 */

const gatedCallSchema = z.strictObject({
  toolName: z.string(),
  /** The observed target (masked when shown). */
  target: z.string().optional(),
  /**
   * `executed` ran; `not_needed` found nothing left to do; `failed` ran and
   * the tool reported a failure; `refused` was let through but no longer
   * held when checked again; `unknown` may have run; `not_run` was approved
   * but the job ended before running it; `denied` by a reviewer;
   * `expired` undecided in time.
   */
  outcome: z.enum(['executed', 'not_needed', 'failed', 'refused', 'unknown', 'not_run', 'denied', 'expired']),
  /** The reviewer who decided, for approved and denied calls. */
  reviewer: z.string().optional(),
  /** Why: the denial's reason, the refusal's or failure's detail (shortened). */
  detail: z.string().optional(),
});
export type GatedCall = z.infer<typeof gatedCallSchema>;

export const jobFactsSchema = z.strictObject({
  schemaVersion: z.literal(1),
  /** Calls that ran, with or without approval (an unknown outcome not counted). */
  executed: z.number().int().min(0),
  /** Every call a reviewer was asked about, in the order asked (the last 50 a job keeps). */
  gated: z.array(gatedCallSchema),
});
export type JobFacts = z.infer<typeof jobFactsSchema>;

const DETAIL_CHARS = 300;

function outcomeOf(request: ApprovalRequest, outcomes: readonly CallOutcome[]): Pick<GatedCall, 'outcome' | 'detail' | 'reviewer'> {
  switch (request.status) {
    case 'pending':
      // Still waiting when the job ended (cancelled, failed): never decided.
      return { outcome: 'expired', detail: 'not decided before the job ended' };
    case 'expired':
      return { outcome: 'expired' };
    case 'denied':
      return { outcome: 'denied', reviewer: request.decision.reviewer, ...(request.decision.reason !== null ? { detail: request.decision.reason } : {}) };
    case 'approved': {
      const last = [...outcomes].reverse().find((o) => o.requestId === request.requestId);
      const reviewer = request.decision.reviewer;
      if (last === undefined) return { outcome: 'not_run', reviewer };
      return { outcome: last.outcome, reviewer, ...(last.outcome === 'executed' || last.detail === '' ? {} : { detail: last.detail }) };
    }
  }
}

/** The facts of a job from its requests (parked and decided) and the outcomes it noted. */
export function jobFacts(input: { readonly requests: readonly ApprovalRequest[]; readonly outcomes: readonly CallOutcome[]; readonly executed: number }): JobFacts {
  const ordered = [...input.requests].sort((a, b) => a.createdAt - b.createdAt);
  return {
    schemaVersion: 1,
    executed: input.executed,
    gated: ordered.map((r) => {
      const { detail, ...rest } = outcomeOf(r, input.outcomes);
      const target = requestTarget(r);
      return {
        toolName: r.toolName,
        ...(target !== undefined ? { target } : {}),
        ...rest,
        ...(detail !== undefined ? { detail: detail.replace(/\s+/g, ' ').trim().slice(0, DETAIL_CHARS) } : {}),
      };
    }),
  };
}

/** Whether every call a reviewer approved ran (or had nothing left to do), and none was denied or expired. */
export function everyGatedCallRan(facts: JobFacts): boolean {
  return facts.gated.every((c) => c.outcome === 'executed' || c.outcome === 'not_needed');
}

const outcomeWords: Record<GatedCall['outcome'], string> = {
  executed: 'ran',
  not_needed: 'not needed',
  failed: 'failed',
  refused: 'refused',
  unknown: 'outcome unknown',
  not_run: 'approved, not run',
  denied: 'denied',
  expired: 'expired',
};

/**
 * One sentence of facts: "0 of 1 approved calls ran: fs_delete /x refused
 * (target changed); 1 denied: fs_write /y by alice (no)". `show` is how the
 * caller escapes and masks texts; the default leaves them as they are.
 */
export function factsText(facts: JobFacts, show: (text: string) => string = (t) => t): string {
  const approved = facts.gated.filter((c) => c.outcome !== 'denied' && c.outcome !== 'expired');
  const ran = approved.filter((c) => c.outcome === 'executed' || c.outcome === 'not_needed');
  const describe = (c: GatedCall) => {
    const target = c.target !== undefined ? ` ${show(c.target)}` : '';
    const by = c.outcome === 'denied' && c.reviewer !== undefined ? ` by ${show(c.reviewer)}` : '';
    const why = c.detail !== undefined ? ` (${show(c.detail)})` : '';
    return `${c.toolName}${target} ${outcomeWords[c.outcome]}${by}${why}`;
  };
  const parts: string[] = [];
  if (approved.length > 0) {
    const missed = approved.filter((c) => !ran.includes(c));
    parts.push(`${ran.length} of ${approved.length} approved call${approved.length === 1 ? '' : 's'} ran${missed.length > 0 ? `: ${missed.map(describe).join('; ')}` : ''}`);
  }
  const denied = facts.gated.filter((c) => c.outcome === 'denied');
  if (denied.length > 0) parts.push(`${denied.length} denied: ${denied.map(describe).join('; ')}`);
  const expired = facts.gated.filter((c) => c.outcome === 'expired');
  if (expired.length > 0) parts.push(`${expired.length} expired: ${expired.map(describe).join('; ')}`);
  if (parts.length === 0) parts.push(`${facts.executed} call${facts.executed === 1 ? '' : 's'} ran, none needed approval`);
  return parts.join('; ');
}
