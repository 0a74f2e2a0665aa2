import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { defaultPayloadConverter } from '@temporalio/common';
import { historyFromJSON } from '@temporalio/common/lib/proto-utils';
import { z } from 'zod';
import { readJob } from '../../client/history/job-history';
import type { RunHistory } from '../../client/history/runs';
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

/**
 * The file names the recorder writes: `<shape>.<tag>[.runN].json`. A shape is
 * lower-case words and hyphens (no dots); a tag is a version like `v8` or
 * `v0v1`, or a commit's short hash (the recorder's default), and may hold dots.
 */
const HISTORY_FILE = /^(?<shape>[a-z0-9]+(?:-[a-z0-9]+)*)\.(?<tag>[A-Za-z0-9_-][A-Za-z0-9._-]*?)(?:\.run(?<run>\d+))?\.json$/;

const files = readdirSync(dir)
  .filter((f) => f.endsWith('.json'))
  .sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));

/** The job shape a recorded history belongs to (the part before the first dot); null for a name the recorder never writes. */
function shapeOf(file: string): string | null {
  return HISTORY_FILE.exec(file)?.groups?.shape ?? null;
}

/** Recorded histories by job, runs in order: `shape.tag.json`, or `shape.tag.run1.json`, `shape.tag.run2.json`. */
function recordedJobs(): Map<string, RunHistory[]> {
  const jobs = new Map<string, RunHistory[]>();
  for (const file of files) {
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
  // A read on the nas, a delete on the media box (approved), then a read no machine owns: denied before anything ran.
  'two-machines': [['fs_read allowed', 'fs_delete approved'], ['fs_read denied']],
  'approved-with-edit': [['fs_delete approved']],
  'cancelled-while-parked': [['fs_delete undecided']],
  // One batch per call a client submitted, in the order taken: the read while the delete waited is no part of the delete's
  // batch, and the delete's two retries (its key again, and a new key with its tool and arguments) are no calls of their own.
  'client-driven': [['fs_stat allowed'], ['fs_delete approved'], ['fs_list allowed']],
  // A delete whose request expired while the job took calls: a second delete meanwhile never became a request (one waits at a time).
  'client-expired': [['fs_delete expired'], ['fs_delete undecided'], ['fs_stat allowed']],
  'client-withdrawn': [['fs_delete withdrawn'], ['fs_stat allowed']],
  'completion-gate': [['fs_write allowed']],
  'continue-as-new-parked': [['fs_stat allowed'], ['fs_delete approved']],
  'denied-by-reviewer': [['fs_delete denied by reviewer']],
  deny: [['fs_write denied', 'fs_list allowed']],
  expired: [['fs_delete expired']],
  'judge-shadow': [['fs_write allowed']],
  'passkey-decision': [['fs_move approved']],
  redirect: [['fs_write redirected'], ['fs_write allowed']],
  'rejected-forged-decision': [['fs_delete approved']],
  'signed-decision': [['fs_move approved']],
  // Six signed decisions at once and an unsigned one: the first approval counted.
  'concurrent-decisions': [['fs_move approved']],
  stop: [['fs_chmod stopped']],
  // A delete in a root kept for undo, and the undo of one: a job of its own that took that one call.
  'reversible-delete': [['fs_delete approved']],
  undo: [['fs_undo approved']],
};

const jobs = recordedJobs();

test('every recorded history is named as the recorder names it, and every shape has its expected calls here', () => {
  expect(files.length).toBeGreaterThan(0);
  expect(files.filter((f) => shapeOf(f) === null)).toEqual([]);
  const recorded = [...new Set(files.map(shapeOf))].sort();
  // A shape recorded without an entry in `expected` would be held to nothing but its own rules: add one.
  expect(recorded.filter((s) => s === null || !Object.hasOwn(expected, s))).toEqual([]);
  // An entry whose histories are gone checks nothing: remove it with them.
  expect(Object.keys(expected).filter((s) => !recorded.includes(s))).toEqual([]);
});

test.each([...jobs.keys()])('%s: the calls and what became of them; its own rules change nothing', async (name) => {
  const runs = jobs.get(name) ?? [];
  const { job, skipped } = await readJob(name, runs, decode);
  expect(skipped).toEqual([]);
  const shapeName = shapeOf(runs[0]?.runId ?? '');
  expect(shapeName).not.toBeNull();
  expect(shape(job)).toEqual(expected[shapeName!]);
  expect(shape(job).flat().length).toBeGreaterThan(0);
  if (job === undefined || runs[0] === undefined) throw new Error('no job');
  const rehearsed = rehearseJob(job, await ownSnapshot(runs[0]));
  expect(rehearsed.filter((c) => c.changed)).toEqual([]);
});
