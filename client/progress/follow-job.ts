import type { Client } from '@temporalio/client';
import type { temporal } from '@temporalio/proto';
import type { JobEnd, ProgressEvent } from '../../core/reviewer/progress';
import { HistoryReader } from '../history/progress-reader';

export interface FollowJobOptions {
  readonly client: Client;
  readonly jobId: string;
  /** The run to start from (its continuations are followed); default the latest. */
  readonly runId?: string;
  /** Events up to this id (of the first run) are read for context but not reported: they happened before anyone watched. */
  readonly reportAfterEventId?: number;
  readonly onEvent: (event: ProgressEvent) => void;
  /** Called with each run followed (the first and every continuation). */
  readonly onRun?: (runId: string) => void;
  readonly signal?: AbortSignal;
}

/**
 * Follows a job's history on the server until it ends (or `signal`
 * aborts), reporting each progress event once, in order: a long poll
 * returns every new event, so nothing is missed between two looks. Resolves with how the job ended,
 * or undefined when aborted.
 */
export async function followJob(options: FollowJobOptions): Promise<JobEnd | undefined> {
  const { client, jobId, signal } = options;
  const reader = new HistoryReader(client);
  let runId = options.runId ?? '';
  let quietUpTo = options.reportAfterEventId ?? 0;
  let token: Uint8Array | undefined;
  if (runId !== '') options.onRun?.(runId);
  for (;;) {
    if (aborted(signal)) return undefined;
    const request = {
      namespace: client.options.namespace,
      execution: { workflowId: jobId, runId },
      waitNewEvent: true,
      ...(token !== undefined ? { nextPageToken: token } : {}),
    };
    let page: temporal.api.workflowservice.v1.GetWorkflowExecutionHistoryResponse;
    try {
      page = await poll(client, request, signal);
    } catch (err) {
      // Aborted while the poll waited (TS cannot see the signal change during the await).
      if (aborted(signal)) return undefined;
      throw err;
    }
    let next: string | undefined;
    for (const event of page.history?.events ?? []) {
      const read = await reader.read(event);
      if (Number(event.eventId ?? 0) > quietUpTo) for (const e of read.events) options.onEvent(e);
      if (read.end !== undefined) return read.end;
      next = read.next ?? next;
    }
    if (next !== undefined && next !== '') {
      runId = next;
      token = undefined;
      quietUpTo = 0;
      options.onRun?.(runId);
      continue;
    }
    // An empty token with no close event read: the history ended under a run this client did not see (a reset); follow the latest.
    if (page.nextPageToken === undefined || page.nextPageToken === null || page.nextPageToken.length === 0) {
      if (runId === '') return undefined;
      runId = '';
      token = undefined;
      continue;
    }
    token = page.nextPageToken;
  }
}

/**
 * One long poll, cancelled when `signal` aborts. The connection adds an
 * abort listener per call and never removes it: each call gets a signal
 * of its own, linked to the caller's only while it runs.
 */
async function poll(
  client: Client,
  request: temporal.api.workflowservice.v1.IGetWorkflowExecutionHistoryRequest,
  signal: AbortSignal | undefined,
): Promise<temporal.api.workflowservice.v1.GetWorkflowExecutionHistoryResponse> {
  if (signal === undefined) return client.workflowService.getWorkflowExecutionHistory(request);
  const call = new AbortController();
  const forward = () => call.abort();
  signal.addEventListener('abort', forward, { once: true });
  try {
    return await client.connection.withAbortSignal(call.signal, () => client.workflowService.getWorkflowExecutionHistory(request));
  } finally {
    signal.removeEventListener('abort', forward);
  }
}

function aborted(signal: AbortSignal | undefined): boolean {
  return signal?.aborted === true;
}
