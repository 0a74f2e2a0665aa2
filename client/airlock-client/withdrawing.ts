import { WorkflowUpdateRPCTimeoutOrCancelledError, WorkflowUpdateStage, type Client } from '@temporalio/client';
import { WorkflowNotFoundError } from '@temporalio/common';
import type { WithdrawInput } from '../../core/approval/approvals';
import { withdrawRequestsUpdate } from '../../workflows/messages';
import { WORKER_WAIT_MS } from './jobs';

/**
 * Withdrawing what a job waits for: every request a reviewer has not
 * decided ends as withdrawn (not run, answered so, audited), as when an
 * agent's token is revoked. A job that is not running waits for nothing.
 */

export type WithdrawOutcome =
  /** `callKeys`: the agent's calls ended before any reviewer was asked (sent, not yet decided). */
  | { readonly kind: 'withdrawn'; readonly requestIds: readonly string[]; readonly callKeys: readonly string[] }
  /** No such job runs: nothing waits. */
  | { readonly kind: 'not_running' }
  /** No agent worker took it in time: nothing was withdrawn (an update not accepted is not kept). */
  | { readonly kind: 'not_taken'; readonly reason: string };

export async function withdrawRequests(client: Client, jobId: string, input: WithdrawInput, waitMs = WORKER_WAIT_MS): Promise<WithdrawOutcome> {
  const handle = client.workflow.getHandle(jobId);
  const running = await handle.describe().then(
    (d) => d.status.name === 'RUNNING',
    (err: unknown) => {
      if (err instanceof WorkflowNotFoundError) return false;
      throw err;
    },
  );
  if (!running) return { kind: 'not_running' };
  try {
    const update = await client.withDeadline(Date.now() + waitMs, () => handle.startUpdate(withdrawRequestsUpdate, { args: [input], waitForStage: WorkflowUpdateStage.ACCEPTED }));
    const { withdrawn, calls } = await update.result();
    return { kind: 'withdrawn', requestIds: withdrawn, callKeys: calls ?? [] };
  } catch (err) {
    if (err instanceof WorkflowUpdateRPCTimeoutOrCancelledError) return { kind: 'not_taken', reason: `no agent worker took the withdrawal within ${Math.round(waitMs / 1000)} s` };
    throw err;
  }
}
