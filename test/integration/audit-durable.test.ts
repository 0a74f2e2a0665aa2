import { existsSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { AuditEvent } from '../../core/audit/events';
import type { AgentJobStateView } from '../../core/job/job-view';
import type { temporal } from '@temporalio/proto';
import { JobHarness } from '../helpers/job-harness';
import { smallFolder, type SmallFolder } from '../helpers/small-fs';
import { expectRunReplays } from '../helpers/replays';

/**
 * The audit log on a real folder that runs full (a 64 KiB tmpfs; a
 * read-only folder when not root): jobs keep what they could not write,
 * say so, and write it exactly once when space returns.
 */

type History = temporal.api.history.v1.IHistory;

let h: JobHarness;
let small: SmallFolder;
let file: string;

const TORN = '{"type":"tool_exec';

beforeAll(async () => {
  small = smallFolder();
  file = join(small.dir, 'audit.jsonl');
  // An older line that leaves 40 bytes of its page free (a full tmpfs then takes only the start of a batch),
  // and a torn tail from a crash mid-write, which the sink moves aside when it opens the file.
  const seed = (error: string) => JSON.stringify({ type: 'runtime_error', jobId: 'seed', at: '2025-01-01T00:00:00.000Z', policyVersion: 'v', data: { code: 'model_error', error } });
  writeFileSync(file, `${seed('x'.repeat(4096 - 40 - seed('').length - 1))}\n${TORN}`, { mode: 0o600 });
  h = await JobHarness.create({
    auditFile: file,
    rules: {
      version: 1,
      rules: [{ id: 'approve-deletes', version: 1, name: 'Deleting needs approval', scope: { categories: ['delete'] }, action: 'request_approval' }],
    },
  });
});
afterEach(async () => {
  small.unblock();
  await h.terminateRunning();
});
afterAll(async () => {
  await h?.close();
  small?.close();
});

const refused = /no space left on device|read-only file system|permission denied/i;

/** Every line of the log is one whole event (no torn or glued line), and the file ends with a newline. */
function wholeLines(): AuditEvent[] {
  const text = readFileSync(file, 'utf8');
  expect(text.endsWith('\n')).toBe(true);
  return text
    .slice(0, -1)
    .split('\n')
    .map((line) => JSON.parse(line) as AuditEvent);
}

/** No event of the job is in the log twice. */
function expectOnce(jobId: string): AuditEvent[] {
  const events = wholeLines().filter((e) => e.jobId === jobId);
  expect(new Set(events.map((e) => JSON.stringify(e))).size).toBe(events.length);
  return events;
}

/**
 * Every run of the job, as recorded, replays against the workflow code:
 * keeping and retrying events is deterministic, and so is the decision to
 * continue as new (taken in a run that then ended, so it is replayed from
 * its own history, not only the last run's).
 */
async function expectReplays(jobId: string): Promise<History[]> {
  let runId: string | undefined = (await h.env.client.workflow.getHandle(jobId).describe()).runId;
  const runs: History[] = [];
  while (runId !== undefined) {
    const history: History = await h.env.client.workflow.getHandle(jobId, runId).fetchHistory();
    await expectRunReplays(history, jobId, `audit-durable ${runId}`);
    runs.push(history);
    const previous: string | null | undefined = history.events?.[0]?.workflowExecutionStartedEventAttributes?.continuedExecutionRunId;
    runId = previous === undefined || previous === null || previous === '' ? undefined : previous;
  }
  return runs;
}

const deleteThenComplete = (path: string) => ({
  turns: [{ tool_calls: [{ name: 'fs_delete', arguments: { path } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] }],
});

test('a torn tail left by a crash is moved aside when the worker opens the log, and said once', () => {
  expect(readFileSync(`${file}.torn`, 'utf8')).toBe(`${TORN}\n`);
  expect(h.auditWarnings.filter((l) => l.includes('partial line'))).toEqual([
    `airlock: audit log ${file} ended in a partial line (${TORN.length} bytes, from a write cut short); moved to ${file}.torn`,
  ]);
  expect(wholeLines().map((e) => e.jobId)).toEqual(['seed']);
});

test('a parked job whose events cannot be written says so in its view and `show`, and writes them once when space returns', async () => {
  writeFileSync(join(h.root, 'old.log'), 'old');
  small.block();
  const { jobId } = await h.start({ script: deleteThenComplete('old.log') });
  const parked = await h.waitFor(jobId, (s) => s.status === 'awaiting_approval' && (s.audit?.unwritten ?? 0) > 0, 'unwritten audit events while parked');
  expect(parked.audit).toMatchObject({ dropped: 0, lastError: expect.stringMatching(refused) });
  expect(parked.audit?.failures).toBeGreaterThan(0);
  expect(parked.audit?.lastError).toContain(file);
  expect(wholeLines().filter((e) => e.jobId === jobId)).toEqual([]);

  const text = await h.cli(['show', jobId]);
  expect(text.code).toBe(0);
  expect(text.stdout).toMatch(/AUDIT: \d+ write\(s\) to the audit log failed; \d+ event\(s\) waiting to be written again; last error: .*(no space left on device|permission denied)/i);
  const json = await h.cli(['show', jobId, '--json']);
  expect(json.code).toBe(0);
  const shown = JSON.parse(json.stdout) as AgentJobStateView;
  expect(shown.audit?.unwritten).toBeGreaterThan(0);
  expect(shown.audit?.lastError).toMatch(refused);
  // The worker log names the file and the error.
  expect(h.auditWarnings.some((l) => l.startsWith(`airlock: cannot write the audit log ${file}: `) && refused.test(l))).toBe(true);

  small.unblock();
  expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: true });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed', audit: { unwritten: 0, dropped: 0 } });
  const done = await h.state(jobId);
  expect(done.audit).toMatchObject({ unwritten: 0, dropped: 0 });

  const events = expectOnce(jobId);
  const count = (type: AuditEvent['type']) => events.filter((e) => e.type === type).length;
  expect(count('approval_requested')).toBe(1);
  expect(count('approval_decided')).toBe(1);
  expect(count('tool_executed')).toBe(1);
  expect(existsSync(join(h.root, 'old.log'))).toBe(false);
  // Recorded order survives the retry: the request comes before the decision, the decision before the call.
  const order = events.map((e) => e.type).filter((t) => ['approval_requested', 'approval_decided', 'tool_executed'].includes(t));
  expect(order).toEqual(['approval_requested', 'approval_decided', 'tool_executed']);
  expect(h.auditWarnings.some((l) => l.startsWith(`airlock: audit log ${file} is writable again after `))).toBe(true);
  expect(readFileSync(`${file}.torn`, 'utf8')).toBe(`${TORN}\n`);
  await expectReplays(jobId);
});

test('events not yet written are carried across continue-as-new and written once later', async () => {
  writeFileSync(join(h.root, 'long.log'), 'long');
  const { jobId } = await h.start({ script: deleteThenComplete('long.log'), input: { historyEventLimit: 60 } });
  const parked = await h.waitForPending(jobId);
  const request = parked.pending[0];
  if (request === undefined) throw new Error('no pending request');
  small.block('read-only');
  // Each stray decision is audited (and its write fails): history grows until the job continues as new.
  let strays = 0;
  let view = await h.state(jobId);
  for (; strays < 40 && view.counters.continuedAsNew === 0; strays++) {
    await h.airlock.sendDecision(jobId, { requestId: 'stray', fingerprint: request.fingerprint, nonce: request.nonce, decision: 'approve', reviewer: 'nobody' });
    view = await h.state(jobId);
  }
  view = await h.waitFor(jobId, (s) => s.counters.continuedAsNew >= 1 && s.pending.length === 1, 'continue-as-new while parked');
  expect(view.audit?.unwritten).toBeGreaterThan(0);
  expect(view.audit?.lastError).toMatch(refused);

  small.unblock();
  expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: true });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed', audit: { unwritten: 0, dropped: 0 } });
  const events = expectOnce(jobId);
  // Every stray decision the job took in (before and after continuing) is in the log exactly once.
  expect(strays).toBeGreaterThan(0);
  expect(events.filter((e) => e.type === 'approval_fingerprint_mismatch')).toHaveLength(strays);
  expect(events.filter((e) => e.type === 'approval_requested')).toHaveLength(1);
  expect(events.filter((e) => e.type === 'tool_executed')).toHaveLength(1);
  // The run that continued as new replays too, not only the one that finished.
  const runs = await expectReplays(jobId);
  expect(runs.length).toBeGreaterThanOrEqual(2);
});

test('a job that ends while the disk stays full finishes anyway, its result carrying the events it could not write, which `airlock audit --recover` writes back once', async () => {
  writeFileSync(join(h.root, 'a.txt'), 'a');
  small.block('read-only');
  const { jobId } = await h.start({
    script: { turns: [{ tool_calls: [{ name: 'fs_stat', arguments: { path: 'a.txt' } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] }] },
  });
  const result = await h.result(jobId);
  expect(result.status).toBe('completed');
  expect(result.audit?.unwritten).toBeGreaterThan(0);
  expect(result.audit?.lastError).toMatch(refused);
  const text = await h.cli(['show', jobId]);
  expect(text.stdout).toMatch(/AUDIT: \d+ write\(s\) to the audit log failed; \d+ event\(s\) never written/);
  small.unblock();
  expect(wholeLines().filter((e) => e.jobId === jobId)).toEqual([]);
  await expectReplays(jobId);

  // The result carries them, sanitized: written back from there once the log is writable again, and only once.
  expect(result.audit?.events).toHaveLength(result.audit?.unwritten ?? -1);
  // The CLI finds the log as `<data>/audit/audit.jsonl`: here, the small folder.
  const data = mkdtempSync(join(h.dir, 'recover-'));
  symlinkSync(small.dir, join(data, 'audit'));
  const recover = await h.cli(['audit', '--recover', '--since', '1h'], { AIRLOCK_DATA_DIR: data });
  expect(recover).toMatchObject({ code: 0, stderr: '' });
  expect(recover.stdout).toContain(`job ${jobId} (run `);
  const back = wholeLines().filter((e) => e.jobId === jobId);
  expect(back).toHaveLength(result.audit?.unwritten ?? -1);
  expect(back.map((e) => e.eventId)).toEqual(result.audit?.events?.map((e) => e.eventId));
  expect(back.every((e) => e.runId !== undefined)).toBe(true);
  expect(back.map((e) => e.type)).toContain('tool_executed');
  expect((await h.cli(['audit', '--recover', '--since', '1h'], { AIRLOCK_DATA_DIR: data })).code).toBe(0);
  expect(wholeLines().filter((e) => e.jobId === jobId)).toHaveLength(back.length);
});
