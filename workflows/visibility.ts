import { setCurrentDetails, upsertSearchAttributes } from '@temporalio/workflow';
import { approvalCard } from '../core/approval-card';
import type { PendingRequest } from '../core/approvals';
import { pendingToolsKey, statusKey, type JobStatus } from '../core/search-attributes';

/**
 * What the Web UI shows of a job: `AirlockStatus` and `AirlockPendingTools`
 * (upserted only when they change, each upsert is a history event) and the
 * approval card as current details.
 */
export class Visibility {
  private shownStatus: JobStatus | undefined;
  private shownTools = '';

  show(status: JobStatus, pending: readonly PendingRequest[]): void {
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
    setCurrentDetails(approvalCard(pending));
  }
}
