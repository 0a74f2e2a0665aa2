import type { Client } from '@temporalio/client';
import { describeError } from '../../core/temporal/describe-error';
import type { z } from 'zod';
import { agentJobInputSchema, AGENT_JOB_WORKFLOW } from '../../core/job/job-input';
import { payloadDecoder, type DecodePayloads, type HistoryEvent } from './payloads';

/** Finding a job's runs and fetching their histories; what a run was started with, and who cancelled it. */

/** One run's history, as fetched from the server or read from a file. */
export interface RunHistory {
  readonly runId: string;
  readonly events: readonly HistoryEvent[];
}

export interface ListedRun {
  readonly workflowId: string;
  readonly runId: string;
  readonly startTime: Date;
  readonly status: string;
}

/** A run that could not be read, and why (kept out of the rehearsal, and said so). */
export interface SkippedRun {
  readonly jobId: string;
  readonly runId: string;
  readonly reason: string;
}

/** Who asked to cancel a job and why (kept by Temporal, not by the job). */
export interface CancelRequest {
  readonly reason: string;
  readonly identity: string;
}

/** A visibility query over agent jobs: started since a time, one job (every run of it), or both. */
export function jobsQuery(options: { readonly since?: Date | undefined; readonly jobId?: string | undefined }): string {
  const parts = [`WorkflowType = "${AGENT_JOB_WORKFLOW}"`];
  if (options.since !== undefined) parts.push(`StartTime >= "${options.since.toISOString()}"`);
  if (options.jobId !== undefined) parts.push(`WorkflowId = "${options.jobId}"`);
  return parts.join(' AND ');
}

export async function listRuns(client: Client, query: string): Promise<ListedRun[]> {
  const runs: ListedRun[] = [];
  for await (const info of client.workflow.list({ query })) {
    runs.push({ workflowId: info.workflowId, runId: info.runId, startTime: info.startTime, status: info.status.name });
  }
  return runs;
}

/** The histories of a job's runs, in the order given; a run whose history cannot be fetched is skipped, said why. */
export async function runHistories(client: Client, jobId: string, runs: readonly ListedRun[]): Promise<{ histories: RunHistory[]; skipped: SkippedRun[] }> {
  const histories: RunHistory[] = [];
  const skipped: SkippedRun[] = [];
  for (const run of runs) {
    try {
      const history = await client.workflow.getHandle(jobId, run.runId).fetchHistory();
      histories.push({ runId: run.runId, events: history.events ?? [] });
    } catch (err) {
      skipped.push({ jobId, runId: run.runId, reason: describeError(err) });
    }
  }
  return { histories, skipped };
}

/** What a run was started with: its task queue, and its input when it is an agent job's input this build reads. */
export interface StartedRun {
  readonly taskQueue: string | undefined;
  readonly input: z.infer<typeof agentJobInputSchema> | undefined;
}

/** The start of a run, from its first event (undefined fields when the first event is no start). */
export async function startedRun(events: readonly HistoryEvent[], decode: DecodePayloads): Promise<StartedRun> {
  const started = events[0]?.workflowExecutionStartedEventAttributes;
  if (started === undefined || started === null) return { taskQueue: undefined, input: undefined };
  const input = agentJobInputSchema.safeParse(await decode(started.input?.payloads ?? []));
  return { taskQueue: started.taskQueue?.name ?? undefined, input: input.success ? input.data : undefined };
}

/** The start of the job's current run. */
export async function startInputOf(client: Client, workflowId: string): Promise<StartedRun> {
  const history = await client.workflow.getHandle(workflowId).fetchHistory();
  return startedRun(history.events ?? [], payloadDecoder(client));
}

/** A cancelled run's cancel request, read from the end of its history (it is among the last events). */
export async function cancelRequestOf(client: Client, workflowId: string, runId: string): Promise<CancelRequest | undefined> {
  let nextPageToken: Uint8Array | undefined;
  for (let page = 0; page < 5; page++) {
    const res = await client.workflowService.getWorkflowExecutionHistoryReverse({
      namespace: client.options.namespace,
      execution: { workflowId, runId },
      maximumPageSize: 100,
      ...(nextPageToken !== undefined ? { nextPageToken } : {}),
    });
    for (const event of res.history?.events ?? []) {
      const request = event.workflowExecutionCancelRequestedEventAttributes;
      if (request != null) return { reason: request.cause ?? '', identity: request.identity ?? '' };
    }
    if (res.nextPageToken == null || res.nextPageToken.length === 0) return undefined;
    nextPageToken = res.nextPageToken;
  }
  return undefined;
}
