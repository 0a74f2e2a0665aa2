import type { Client } from '@temporalio/client';
import { pool } from './jobs';

/** Workflow task timeouts and failures in the (latest run's) histories of these jobs. */
export async function countTaskTroubles(client: Client, jobIds: readonly string[]): Promise<{ timedOut: number; failed: number }> {
  let timedOut = 0;
  let failed = 0;
  await pool(jobIds, 10, async (jobId) => {
    const history = await client.workflow.getHandle(jobId).fetchHistory();
    for (const e of history.events ?? []) {
      if (e.workflowTaskTimedOutEventAttributes != null) timedOut++;
      if (e.workflowTaskFailedEventAttributes != null) failed++;
    }
  });
  return { timedOut, failed };
}
