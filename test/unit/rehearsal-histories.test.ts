import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { z } from 'zod';
import { readJob, type RunHistory } from '../../client/job-history';
import { policySnapshotSchema, type PolicySnapshot } from '../../core/policy/snapshot';
import { rehearseJob, type RecordedJob } from '../../core/job/rehearsal';

/**
 * The recorded histories of every job shape and every build since the
 * first: what the rehearsal reads from each, and that under the job's own
 * snapshot it decides every call as the job did.
 */

const dir = join(__dirname, '..', 'replay', 'histories');

const decode = async (payloads: Parameters<typeof defaultPayloadConverter.fromPayload>[0][]): Promise<unknown> =>
  payloads[0] === undefined ? undefined : defaultPayloadConverter.fromPayload(payloads[0]);

/** Recorded histories by job, runs in order: `name.vN.json`, or `name.vN.run1.json`, `name.vN.run2.json`. */
function recordedJobs(): Map<string, RunHistory[]> {
  const jobs = new Map<string, RunHistory[]>();
  for (const file of readdirSync(dir).filter((f) => f.endsWith('.json')).sort()) {
    const name = file.replace(/(\.run\d+)?\.json$/, '');
    const history = historyFromJSON(JSON.parse(readFileSync(join(dir, file), 'utf8')));
    jobs.set(name, [...(jobs.get(name) ?? []), { runId: file, events: history.events ?? [] }]);
  }
  return jobs;
}

const loadedSchema = z.looseObject({ snapshot: policySnapshotSchema });
const markerDataSchema = z.looseObject({ activity_type: z.string() });

/** The snapshot the job took when it started. */
async function ownSnapshot(run: RunHistory): Promise<PolicySnapshot> {
  for (const e of run.events) {
    const marker = e.markerRecordedEventAttributes;
    if (marker?.details?.data == null) continue;
    const data = markerDataSchema.safeParse(await decode(marker.details.data.payloads ?? []));
    if (data.success && data.data.activity_type === 'loadPolicySnapshot') return loadedSchema.parse(await decode(marker.details.result?.payloads ?? [])).snapshot;
  }
  throw new Error(`${run.runId}: no policy snapshot`);
}

function shape(job: RecordedJob | undefined): string[][] {
  return (job?.batches ?? []).map((b) => b.calls.map((c) => `${c.call.toolName} ${c.happened}`));
}

const expected: Record<string, string[][]> = {
  'allowed-batch': [['fs_list allowed', 'fs_stat allowed', 'fs_write allowed', 'fs_read allowed']],
  'allowed-call': [['fs_read allowed']],
  approved: [['fs_delete approved', 'fs_stat allowed']],
  'approved-with-edit': [['fs_delete approved']],
  'completion-gate': [['fs_write allowed']],
  'continue-as-new-parked': [['fs_stat allowed'], ['fs_delete approved']],
  'denied-by-reviewer': [['fs_delete denied by reviewer']],
  deny: [['fs_write denied', 'fs_list allowed']],
  expired: [['fs_delete expired']],
  'judge-shadow': [['fs_write allowed']],
  redirect: [['fs_write redirected'], ['fs_write allowed']],
  'rejected-forged-decision': [['fs_delete approved']],
  'signed-decision': [['fs_move approved']],
  stop: [['fs_chmod stopped']],
  'upgraded-while-parked': [['fs_list allowed', 'fs_delete approved']],
};

const jobs = recordedJobs();

test.each([...jobs.keys()])('%s: the calls and what became of them; its own rules change nothing', async (name) => {
  const runs = jobs.get(name) ?? [];
  const { job, skipped } = await readJob(name, runs, decode);
  expect(skipped).toEqual([]);
  const scenario = name.replace(/\.v[0-9v]+$/, '');
  // A scenario recorded later without an entry here is still held to deciding as the job did.
  const known = expected[scenario];
  if (known !== undefined) expect(shape(job)).toEqual(known);
  expect(shape(job).flat().length).toBeGreaterThan(0);
  if (job === undefined || runs[0] === undefined) throw new Error('no job');
  const rehearsed = rehearseJob(job, await ownSnapshot(runs[0]));
  expect(rehearsed.filter((c) => c.changed)).toEqual([]);
});
