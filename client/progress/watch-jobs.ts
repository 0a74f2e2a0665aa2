import { setMaxListeners } from 'node:events';
import type { Client } from '@temporalio/client';
import { AGENT_JOB_WORKFLOW } from '../../core/job/job-input';
import type { ProgressEvent } from '../../core/reviewer/progress';
import { followJob } from './follow-job';

/** Visibility is updated a moment after a job closes. */
const CLOSE_MARGIN_MS = 10_000;

export interface WatchJobsOptions {
  readonly client: Client;
  readonly onEvent: (jobId: string, event: ProgressEvent) => void;
  /** Reports a job that could not be followed; the watch goes on. */
  readonly onError: (jobId: string, err: unknown) => void;
  readonly signal: AbortSignal;
  /** How often to look for new jobs. */
  readonly intervalMs?: number;
}

/**
 * Follows every job of the namespace: those running when the watch
 * starts from their next event on, those started later from their start.
 * Returns when `signal` aborts and every follower has stopped.
 */
export async function watchJobs(options: WatchJobsOptions): Promise<void> {
  const { client, signal } = options;
  // Each followed job listens on the signal while it polls: many jobs are not a leak.
  setMaxListeners(10_000, signal);
  const since = Date.now() - 1000;
  const following = new Map<string, Promise<void>>();
  /** Runs followed already (with their continuations): a listing that shows them again starts nothing. */
  const seenRuns = new Set<string>();
  let first = true;
  let lookedAt = since;
  while (!signal.aborted) {
    const now = Date.now();
    try {
      // Open jobs, and those that closed since the last look (a short job may start and end between two looks).
      const closedSince = new Date(lookedAt - CLOSE_MARGIN_MS).toISOString();
      const query = `WorkflowType = "${AGENT_JOB_WORKFLOW}" AND (ExecutionStatus = "Running" OR CloseTime >= "${closedSince}")`;
      for await (const info of client.workflow.list({ query })) {
        if (seenRuns.has(info.runId) || following.has(info.workflowId)) continue;
        seenRuns.add(info.runId);
        const fresh = info.startTime.getTime() >= since;
        const reportAfterEventId = first && !fresh ? info.historyLength : 0;
        const jobId = info.workflowId;
        const follower = followJob({
          client,
          jobId,
          runId: info.runId,
          reportAfterEventId,
          signal,
          onRun: (runId) => seenRuns.add(runId),
          onEvent: (event) => options.onEvent(jobId, event),
        })
          .then(() => undefined)
          .catch((err: unknown) => {
            if (!signal.aborted) options.onError(jobId, err);
          })
          .finally(() => following.delete(jobId));
        following.set(jobId, follower);
      }
      first = false;
      lookedAt = now;
    } catch (err) {
      if (!signal.aborted) options.onError('(listing jobs)', err);
    }
    await sleep(options.intervalMs ?? 1000, signal);
  }
  await Promise.all(following.values());
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
