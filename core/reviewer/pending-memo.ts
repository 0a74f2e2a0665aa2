import { z } from 'zod';
import type { PendingRequest } from '../approval/approvals';
import { parkedBatchViewSchema, type ParkedBatchView } from '../job/batch-view';
import { pendingView, type PendingRequestView, type PendingViewOf } from '../job/job-view';
import { maskPreview } from '../redaction/masking';
import { contentPreviewSchema, type ContentPreview } from '../tools/content-preview';
import { reversibilitySchema } from '../tools/undo';
import { standingSettingsSchema } from '../approval/standing';
import { observedStateSchema } from '../tools/observed-state';

/** The memo key under which a parked job publishes what waits, for list views. */
export const PENDING_MEMO_KEY = 'airlockPending';

const KEPT_ARG_CHARS = 300;
/** Diff lines a list keeps (`show` has them all): a memo rides in every visibility listing. */
const KEPT_DIFF_LINES = 40;

/** A write's preview as a list keeps it: the first lines of the diff, the rest counted. */
function previewOf(preview: ContentPreview | undefined): { preview?: ContentPreview } {
  if (preview === undefined) return {};
  if (preview.kind !== 'text' || preview.lines.length <= KEPT_DIFF_LINES) return { preview };
  return { preview: { ...preview, lines: preview.lines.slice(0, KEPT_DIFF_LINES), omitted: preview.omitted + preview.lines.length - KEPT_DIFF_LINES } };
}

/** Arguments as a list shows them: masked, long texts shortened (a write's content can be a megabyte). */
function previewArgs(args: unknown): unknown {
  if (args === null || typeof args !== 'object' || Array.isArray(args)) return args;
  return Object.fromEntries(Object.entries(args).map(([k, v]) => [k, typeof v === 'string' && v.length > KEPT_ARG_CHARS ? maskPreview(v, KEPT_ARG_CHARS) : v]));
}

export interface PendingMemoInput {
  readonly goal: string;
  /** None when a job starts: its client sets the empty memo. */
  readonly pending?: readonly PendingRequest[];
  readonly batch?: ParkedBatchView | null;
  /** How a request becomes its view; the job passes its memo of them. */
  readonly viewOf?: PendingViewOf;
}

/**
 * What a parked job keeps in its memo: each pending request as reviewers
 * see it (masked), so `airlock pending` is one visibility query and an
 * approval needs no worker to look the request up.
 */
export function pendingMemo(input: PendingMemoInput): PendingMemo {
  const { goal, pending = [], batch = null, viewOf = pendingView } = input;
  return {
    v: 1,
    goal: maskPreview(goal, 500),
    ...(batch !== null && pending.length > 0 ? { batch } : {}),
    requests: pending.map((r) => {
      const view = viewOf(r);
      return { ...view, args: previewArgs(view.args), ...previewOf(view.preview) };
    }),
  };
}

export const pendingMemoSchema = z.object({
  v: z.literal(1),
  goal: z.string(),
  requests: z.array(
    z.object({
      requestId: z.string(),
      callId: z.string(),
      toolName: z.string(),
      args: z.unknown(),
      ruleId: z.string(),
      ruleVersion: z.number(),
      reason: z.string(),
      fingerprint: z.string(),
      nonce: z.string(),
      observed: z.array(observedStateSchema),
      /** What a write changes (absent for other tools and in memos of older builds). */
      preview: contentPreviewSchema.optional(),
      /** The machine the call runs on, when the tools config lists several. */
      machine: z.string().optional(),
      /** Whether the change can be undone (absent for tools that keep nothing and in memos of older builds). */
      undo: reversibilitySchema.optional(),
      /** What a standing approval of the call may be (absent: its rules allow none, and in memos of older builds). */
      standing: standingSettingsSchema.optional(),
      editable: z.array(z.string()),
      reviewers: z.array(z.string()).nullable(),
      signatureRequired: z.boolean().optional(),
      separateRequester: z.boolean().optional(),
      requester: z.string(),
      createdAt: z.string(),
      expiresAt: z.string(),
    }),
  ),
  /** The parked batch: the model's stated reason and the batch's calls (absent in memos of older builds). */
  batch: parkedBatchViewSchema.optional(),
});

export interface PendingMemo {
  readonly v: 1;
  readonly goal: string;
  readonly requests: readonly PendingRequestView[];
  readonly batch?: ParkedBatchView;
}
