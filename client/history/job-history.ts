import type { Client } from '@temporalio/client';
import type { z } from 'zod';
import { describeError } from '../../core/temporal/describe-error';
import { type agentJobInputSchema } from '../../core/job/job-input';
import type { RecordedBatch, RecordedJob } from '../../core/job/rehearsal';
import type { JobReading } from './job-reading';
import { carriedRootsSchema, carriedSnapshotSchema, payloadDecoder, type DecodePayloads } from './payloads';
import { RunReader } from './run-reader';
import { runHistories, startedRun, type ListedRun, type RunHistory, type SkippedRun } from './runs';

export interface ReadJobs {
  readonly jobs: RecordedJob[];
  readonly runs: number;
  readonly skipped: SkippedRun[];
}

/**
 * One job from its runs' histories, oldest first (a job that continued as
 * new is one job). Undefined when the first run's input is not an agent
 * job's input this build reads.
 */
export async function readJob(jobId: string, runs: readonly RunHistory[], decode: DecodePayloads): Promise<{ job: RecordedJob | undefined; skipped: SkippedRun[] }> {
  const reading: JobReading = { requests: new Map(), batches: [], roots: undefined, snapshot: undefined, clientCalls: new Map() };
  const skipped: SkippedRun[] = [];
  let input: z.infer<typeof agentJobInputSchema> | undefined;
  for (const run of runs) {
    const { input: started } = await startedRun(run.events, decode);
    if (started === undefined) {
      skipped.push({ jobId, runId: run.runId, reason: 'its input is not an agent job input this build reads' });
      continue;
    }
    input ??= started;
    const carried = carriedRootsSchema.safeParse(started);
    if (carried.success) reading.roots ??= carried.data.carried.snapshot.detectors.roots;
    const carriedSnapshot = carriedSnapshotSchema.safeParse(started);
    if (carriedSnapshot.success) reading.snapshot ??= carriedSnapshot.data.carried.snapshot;
    await new RunReader(decode, run.runId, reading, input.driver ?? 'model').read(run.events);
  }
  if (input === undefined) return { job: undefined, skipped };
  const job: RecordedJob = {
    jobId,
    scope: input.scope,
    roots: reading.roots,
    maxApprovalRequests: input.maxApprovalRequests,
    batches: reading.batches.map((b): RecordedBatch => ({ runId: b.runId, at: b.at, calls: b.calls.map(({ fingerprint: _f, ttlMs: _t, ...c }) => c) })),
  };
  return { job, skipped };
}

/**
 * Every listed run's history, grouped by job and read in start order. A
 * run whose history cannot be fetched or decoded is skipped with the reason.
 */
export async function readJobs(client: Client, runs: readonly ListedRun[]): Promise<ReadJobs> {
  const decode: DecodePayloads = payloadDecoder(client);
  const byJob = new Map<string, ListedRun[]>();
  for (const r of [...runs].sort((a, b) => a.startTime.getTime() - b.startTime.getTime())) {
    byJob.set(r.workflowId, [...(byJob.get(r.workflowId) ?? []), r]);
  }
  const jobs: RecordedJob[] = [];
  const skipped: SkippedRun[] = [];
  for (const [jobId, jobRuns] of byJob) {
    const fetched = await runHistories(client, jobId, jobRuns);
    const histories = fetched.histories;
    skipped.push(...fetched.skipped);
    try {
      const read = await readJob(jobId, histories, decode);
      skipped.push(...read.skipped);
      if (read.job !== undefined) jobs.push(read.job);
    } catch (err) {
      // A payload this process cannot decode (a codec key it lacks) leaves the whole job out, said so.
      skipped.push({ jobId, runId: histories.map((h) => h.runId).join(','), reason: describeError(err) });
    }
  }
  return { jobs, runs: runs.length, skipped };
}
