import { z } from 'zod';
import { approvalCardSchema } from '../approval/card';

/** A notice as endpoints receive it (versioned): which events there are, and the fields each carries. */

export const noticeEvents = [
  'approval_requested',
  'approval_expired',
  'approval_decided',
  'admin_notification',
  /** An approved call ran (or had nothing left to do). */
  'call_executed',
  /** An approved call did not run: refused when checked again, or failed. */
  'call_not_run',
  'job_cancelled',
  /** A job that asked a reviewer something ended: the facts, then the model's words. */
  'job_ended',
] as const;
export type NoticeEvent = (typeof noticeEvents)[number];

export const MAX_TEXT = 500;
/** Lines of a diff in a notification's text. */
export const NOTICE_DIFF_LINES = 8;

export const noticeSchema = z.strictObject({
  schemaVersion: z.literal(1),
  /** Stable across retries and restarts: a receiver can drop a second delivery of the same id. */
  eventId: z.string(),
  event: z.enum(noticeEvents),
  /** When it happened (workflow time). */
  at: z.string(),
  jobId: z.string(),
  requestId: z.string().nullable(),
  tool: z.string(),
  target: z.string().nullable(),
  /** The call's arguments, masked and shortened as in the audit log. */
  args: z.string().nullable(),
  rule: z.strictObject({ id: z.string(), version: z.number().nullable() }).nullable(),
  /** Why the rule asked: its name and instruction. */
  reason: z.string().nullable(),
  requester: z.string().nullable(),
  expiresAt: z.string().nullable(),
  /** Set on `approval_decided`. */
  decision: z
    .strictObject({
      outcome: z.enum(['approved', 'edited', 'denied']),
      reviewer: z.string(),
      reason: z.string().nullable(),
    })
    .nullable(),
  links: z.strictObject({ job: z.string(), approval: z.string().nullable() }),
  /** The exact commands that decide this request (only while it waits). */
  commands: z.strictObject({ approve: z.string(), deny: z.string() }).nullable(),
  /** The approval card, the same one `pending`, `show` and the Web UI render (on `approval_requested` from builds that record it). */
  card: approvalCardSchema.nullable(),
  /** What became of the request or the job, for the closing notices (`call_*`, `job_*`). */
  outcome: z.string().nullable().optional(),
  /** The requests a cancelled job left undecided. */
  closes: z.array(z.string()).optional(),
  title: z.string(),
  text: z.string(),
});
export type Notice = z.infer<typeof noticeSchema>;
