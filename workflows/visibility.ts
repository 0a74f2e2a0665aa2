import { setCurrentDetails, upsertMemo, upsertSearchAttributes } from '@temporalio/workflow';
import { approvalCard, cardsMarkdown, md } from '../core/reviewer/approval-card';
import type { PendingRequest } from '../core/approval/approvals';
import type { ParkedBatchView } from '../core/job/batch-view';
import type { PendingViewOf } from '../core/job/job-view';
import { PENDING_MEMO_KEY, pendingMemo } from '../core/reviewer/pending-memo';
import { pendingToolsKey, statusKey, type JobStatus } from '../core/temporal/search-attributes';
import type { AgentJobResult } from '../core/job/job-input';
import { endText } from '../core/reviewer/progress';

/**
 * What the Web UI and list views show of a job: `AirlockStatus` and
 * `AirlockPendingTools` (upserted only when they change, each upsert is a
 * history event), the pending requests in the memo (masked, for
 * `airlock pending` in one visibility query), and the approval card as
 * current details.
 */
export class Visibility {
  private shownStatus: JobStatus | undefined;
  private shownTools = '';
  /** A job starts with an empty memo (set by the client that starts it). */
  private shownRequests = '';

  constructor(
    private readonly jobId: string,
    private readonly goal: string,
    /** The job's memo of request views: the memo and the cards mask a request once between them. */
    private readonly viewOf: PendingViewOf,
  ) {}

  /** `approvalPage`: the approval page's URL from the worker's configuration, for the card's link. */
  show(status: JobStatus, pending: readonly PendingRequest[], batch: ParkedBatchView | null, approvalPage?: string): void {
    const tools = [...new Set(pending.map((r) => r.toolName))].sort();
    const key = tools.join(',');
    if (this.shownStatus !== status || this.shownTools !== key) {
      upsertSearchAttributes([
        { key: statusKey, value: status },
        { key: pendingToolsKey, value: tools },
      ]);
      this.shownStatus = status;
      this.shownTools = key;
    }
    const requests = pending.map((r) => r.requestId).join(',');
    if (requests !== this.shownRequests) {
      upsertMemo({ [PENDING_MEMO_KEY]: pendingMemo({ goal: this.goal, pending, batch, viewOf: this.viewOf }) });
      this.shownRequests = requests;
    }
    // Not a command: the Web UI reads it by query. The workflow cannot know how the reader runs the CLI; `npx airlock` works in both cases.
    const now = Date.now();
    const cards = pending.map((r) => approvalCard({ jobId: this.jobId, goal: this.goal, request: this.viewOf(r), batch }, { now, cli: 'npx airlock' }));
    setCurrentDetails(cardsMarkdown(cards, now, approvalPage));
  }

  /** The Web UI's details of an ended job: how it ended, the job's facts before the model's words. */
  ended(result: AgentJobResult): void {
    setCurrentDetails(`**Ended:** ${md(endText({ status: 'result', result }))}`);
  }
}
