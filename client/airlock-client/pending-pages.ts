import { isGrpcServiceError, type Client, type WorkflowExecutionInfo } from '@temporalio/client';
// The function `client.workflow.list()` decodes each listed job with (memo through the data converter, codec included);
// that iterator hides the page token, so its page call is made here and its decoding reused.
import { executionInfoFromRaw } from '@temporalio/client/lib/helpers';
import { MAX_PAGE_SIZE } from '../page-token';
import { UsageError } from '../errors';
import { state as queryState } from './jobs';
import { pendingFromMemo, statusQuery, type PendingJob } from './listing';

/** gRPC's status code (grpc-js is not a runtime dependency of airlock). */
const INVALID_ARGUMENT = 3;


/** One page of parked jobs; `next` is Temporal's token for the page after it, null on the last page. */
export interface PendingPage {
  readonly jobs: PendingJob[];
  readonly next: Uint8Array | null;
}

export interface PendingPageOptions {
  readonly client: Client;
  /** Jobs asked of visibility; a job whose requests were all decided meanwhile is left out, so a page may hold fewer. */
  readonly pageSize: number;
  /** Temporal's token from the previous page; absent for the first. */
  readonly token?: Uint8Array;
}

/** A listed job as `pending` shows it; undefined when nothing of it waits any more. */
async function pendingJobOf(client: Client, info: WorkflowExecutionInfo): Promise<PendingJob | undefined> {
  const memo = pendingFromMemo(info.memo);
  if (memo !== undefined) {
    if (memo.requests.length === 0) return undefined;
    return { jobId: info.workflowId, goal: memo.goal, pending: memo.requests, ...(memo.batch !== undefined ? { batch: memo.batch } : {}) };
  }
  // Parked by a build without the memo: asked by query.
  const state = await queryState(client, info.workflowId);
  if (state.pending.length === 0) return undefined;
  return { jobId: info.workflowId, goal: state.goal, pending: state.pending, ...(state.batch != null ? { batch: state.batch } : {}) };
}

/**
 * One page of jobs parked on approvals: exactly one visibility call, newest
 * start first (Temporal's order for running workflows; no search attribute
 * records when a job parked, and SQL visibility takes no ORDER BY). Each
 * parked job publishes its requests in its memo, so no worker is asked.
 * Visibility is eventually consistent: a request decided a moment ago may
 * still be listed, and deciding it again is rejected by the job.
 */
export async function pendingPage({ client, pageSize, token }: PendingPageOptions): Promise<PendingPage> {
  const { namespace, loadedDataConverter } = client.options;
  let response;
  try {
    response = await client.workflowService.listWorkflowExecutions({ namespace, query: statusQuery('awaiting_approval'), pageSize, nextPageToken: token ?? Buffer.alloc(0) });
  } catch (err) {
    // The token's check refuses typos before this; one the server still calls invalid was made by hand or by another server.
    if (token !== undefined && isGrpcServiceError(err) && Number(err.code) === INVALID_ARGUMENT) {
      throw new UsageError(`the page token was refused by Temporal (${err.details}); start again without --page`);
    }
    throw err;
  }
  const jobs: PendingJob[] = [];
  for (const raw of response.executions) {
    const job = await pendingJobOf(client, await executionInfoFromRaw(raw, loadedDataConverter, raw, namespace));
    if (job !== undefined) jobs.push(job);
  }
  const next = response.nextPageToken;
  return { jobs, next: next !== null && next !== undefined && next.length > 0 ? next : null };
}

/** Every parked job, page after page: ceil(jobs / pageSize) visibility calls (one more when the last page is exactly full). */
export async function listPending({ client, pageSize = MAX_PAGE_SIZE }: { readonly client: Client; readonly pageSize?: number }): Promise<PendingJob[]> {
  const out: PendingJob[] = [];
  let token: Uint8Array | undefined;
  for (;;) {
    const page = await pendingPage({ client, pageSize, ...(token !== undefined ? { token } : {}) });
    out.push(...page.jobs);
    if (page.next === null) return out;
    token = page.next;
  }
}
