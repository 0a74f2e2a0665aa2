import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { JobHarness } from '../helpers/job-harness';

/**
 * `cancel`, `run --id` and `audit --job` through the built CLI against a
 * real dev server and real workers: what ends a job, what refuses to start
 * one, and how the audit log tells two runs of one id apart.
 */

let h: JobHarness;
let data: string;

beforeAll(async () => {
  data = mkdtempSync(join(tmpdir(), 'airlock-cli-jobs-'));
  h = await JobHarness.create({
    rules: {
      version: 1,
      rules: [
        { id: 'approve-deletes', version: 1, name: 'Deleting needs approval', scope: { categories: ['delete'] }, action: 'request_approval' },
        { id: 'record-reads', version: 1, name: 'Record reads', scope: { categories: ['read'] }, action: 'audit_only' },
      ],
    },
    // The product's sink, in the data folder the CLI reads.
    auditFile: join(data, 'audit', 'audit.jsonl'),
  });
});
afterAll(async () => {
  await h.close();
  rmSync(data, { recursive: true, force: true });
});

const cli = (args: string[]) => h.cli(args, { AIRLOCK_DATA_DIR: data });

const parks = {
  turns: [
    { tool_calls: [{ name: 'fs_delete', arguments: { path: 'old.tar' } }] },
    { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] },
  ],
};
const readsAndCompletes = {
  turns: [
    { tool_calls: [{ name: 'fs_list', arguments: { path: '.' } }] },
    { tool_calls: [{ name: 'complete', arguments: { summary: 'listed' } }] },
  ],
};

async function statusOf(jobId: string): Promise<string> {
  return (await h.airlock.client.workflow.getHandle(jobId).describe()).status.name;
}

describe('cancel', () => {
  test('a parked job ends CANCELLED, with the reason in its history; cancelling it again says it is cancelled', async () => {
    writeFileSync(join(h.root, 'old.tar'), 'old backup');
    const { jobId } = await h.start({ script: parks });
    await h.waitForPending(jobId);

    const out = await cli(['cancel', jobId, '--reason', 'wrong folder', '--json']);
    expect(out).toMatchObject({ code: 0, stderr: '' });
    const outcome = JSON.parse(out.stdout) as { jobId: string; runId: string; status: string };
    expect(outcome).toEqual({ jobId, runId: expect.any(String), status: 'cancelled' });
    expect(await statusOf(jobId)).toBe('CANCELLED');
    const history = await h.airlock.client.workflow.getHandle(jobId).fetchHistory();
    const requested = history.events?.find((e) => e.eventType === temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CANCEL_REQUESTED);
    expect(requested?.workflowExecutionCancelRequestedEventAttributes?.cause).toBe('wrong folder');
    // `show` tells it, from that history; the audit has the cancel as its own event.
    const shown = await cli(['show', jobId]);
    expect(shown.stdout).toMatch(/^ {2}cancelled by \S+: wrong folder$/m);
    expect(h.audit(jobId, 'job_cancelled')).toHaveLength(1);

    const again = await cli(['cancel', jobId]);
    expect(again.code).toBe(1);
    expect(again.stderr.trim().split('\n')).toEqual([`airlock cancel: job ${jobId} is not running: it ended cancelled; only a running job can be cancelled`]);
    // The file was not touched: the request was never decided.
    expect(h.audit(jobId, 'tool_executed')).toEqual([]);
  });

  test('the text form says the job is cancelled', async () => {
    writeFileSync(join(h.root, 'old.tar'), 'old backup');
    const { jobId } = await h.start({ script: parks });
    await h.waitForPending(jobId);
    const out = await cli(['cancel', jobId]);
    expect(out).toMatchObject({ code: 0, stderr: '', stdout: expect.stringMatching(new RegExp(`^job ${jobId} is cancelled \\(run [0-9a-f-]+\\)\\n$`)) });
    expect(await statusOf(jobId)).toBe('CANCELLED');
  });

  test('with no agent worker running, the cancellation is requested and the job ends cancelled once one runs', async () => {
    writeFileSync(join(h.root, 'old.tar'), 'old backup');
    const { jobId } = await h.start({ script: parks });
    await h.waitForPending(jobId);
    await h.stopWorkers();
    try {
      const out = await cli(['cancel', jobId, '--json']);
      expect(out).toMatchObject({ code: 0, stderr: '' });
      expect(JSON.parse(out.stdout)).toMatchObject({ jobId, status: 'cancel_requested' });
      expect(await statusOf(jobId)).toBe('RUNNING');
      // Asked twice: the second request is the same request, not an error.
      const again = await cli(['cancel', jobId]);
      expect(again).toMatchObject({ code: 0, stderr: '', stdout: expect.stringContaining(`cancellation of job ${jobId} requested`) });
    } finally {
      await h.resumeWorkers();
    }
    await expect(h.result(jobId)).rejects.toThrow();
    expect(await statusOf(jobId)).toBe('CANCELLED');
  });

  test('a finished job is not cancelled: one line saying how it ended, exit 1', async () => {
    const { jobId } = await h.start({ script: readsAndCompletes });
    expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
    const out = await cli(['cancel', jobId]);
    expect(out.code).toBe(1);
    expect(out.stderr.trim().split('\n')).toEqual([`airlock cancel: job ${jobId} is not running: it ended completed; only a running job can be cancelled`]);
    expect(await statusOf(jobId)).toBe('COMPLETED');
  });

  test('an unknown job is one line, exit 1', async () => {
    const out = await cli(['cancel', 'no-such-job']);
    expect(out.code).toBe(1);
    expect(out.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^airlock cancel: no job no-such-job in this namespace/)]);
  });
});

describe('run --id', () => {
  test('a finished id is refused, naming --new-run; --new-run starts a second run; a running id is refused', async () => {
    h.replay.setScript(readsAndCompletes);
    const jobId = `nightly-${Math.random().toString(36).slice(2, 8)}`;
    const first = await cli(['run', '--goal', 'list the folder', '--id', jobId, '--wait', '--json']);
    expect(first).toMatchObject({ code: 0, stderr: '' });
    const firstRun = (JSON.parse(first.stdout) as { runId: string }).runId;

    const refused = await cli(['run', '--goal', 'list the folder', '--id', jobId]);
    expect(refused.code).toBe(1);
    expect(refused.stderr.trim().split('\n')).toEqual([
      `airlock run: job ${jobId} already ran and ended completed (run ${firstRun}); pass --new-run to start a new run under this id, or choose another --id`,
    ]);
    // Nothing was started: the finished run is still the job's latest.
    expect((await h.airlock.client.workflow.getHandle(jobId).describe()).runId).toBe(firstRun);

    const second = await cli(['run', '--goal', 'list the folder again', '--id', jobId, '--new-run', '--wait', '--json']);
    expect(second).toMatchObject({ code: 0, stderr: '' });
    const secondRun = (JSON.parse(second.stdout) as { runId: string; result: { status: string } });
    expect(secondRun).toMatchObject({ jobId, result: { status: 'completed' } });
    expect(secondRun.runId).not.toBe(firstRun);

    // Audit: each event names its run, --run picks one, and the two runs are said to be two.
    const audit = await cli(['audit', '--job', jobId]);
    expect(audit.code).toBe(0);
    // A table: a header, then one row per event with its time, the start of its run's id, the job and the event.
    const [header, ...lines] = audit.stdout.trim().split('\n');
    expect(header).toMatch(/^TIME +RUN +JOB +EVENT +TOOL +TARGET +WHO +OUTCOME$/);
    expect(lines.length).toBeGreaterThanOrEqual(2);
    const runs = `(${firstRun.slice(0, 8)}|${secondRun.runId.slice(0, 8)})`;
    for (const line of lines) expect(line).toMatch(new RegExp(`^\\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d  ${runs}  ${jobId} +\\w+`));
    expect(lines.some((l) => l.includes(` ${firstRun.slice(0, 8)} `))).toBe(true);
    expect(lines.some((l) => l.includes(` ${secondRun.runId.slice(0, 8)} `))).toBe(true);
    // The job's end is its own event, facts first.
    expect(lines.some((l) => / job_ended .* completed; /.test(l))).toBe(true);
    expect(audit.stderr.trim()).toBe(`airlock audit: job ${jobId} has events of 2 runs (${firstRun}, ${secondRun.runId}); show one with --run RUN_ID`);

    const one = await cli(['audit', '--job', jobId, '--run', firstRun, '--json']);
    expect(one).toMatchObject({ code: 0, stderr: '' });
    const events = JSON.parse(one.stdout) as Array<{ runId?: string; type: string }>;
    expect(events.length).toBeGreaterThan(0);
    expect(events.every((e) => e.runId === firstRun)).toBe(true);
    expect(events.map((e) => e.type)).toContain('policy_rule_matched');

    // A running id: refused whether or not --new-run is given.
    writeFileSync(join(h.root, 'old.tar'), 'old backup');
    h.replay.setScript(parks);
    const parked = `parked-${Math.random().toString(36).slice(2, 8)}`;
    expect((await cli(['run', '--goal', 'delete the old backup', '--id', parked])).code).toBe(0);
    await h.waitForPending(parked);
    for (const extra of [[], ['--new-run']]) {
      const busy = await cli(['run', '--goal', 'again', '--id', parked, ...extra]);
      expect(busy.code).toBe(1);
      expect(busy.stderr.trim().split('\n')).toEqual([expect.stringMatching(new RegExp(`^airlock run: job ${parked} is running \\(run [0-9a-f-]+\\); choose another --id, or cancel it with \`npx airlock cancel ${parked}\`$`))]);
    }
    expect((await cli(['cancel', parked])).code).toBe(0);
  });

  test('--new-run without --id is a usage error', async () => {
    const out = await cli(['run', '--goal', 'x', '--new-run']);
    expect(out.code).toBe(2);
    expect(out.stderr.trim()).toBe('airlock run: --new-run goes with --id (a job without --id gets a new id anyway)');
  });
});

test('audit prints events written before runs were recorded as before, and --run leaves them out', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-cli-old-audit-'));
  try {
    const old = { type: 'runtime_error', jobId: 'job-old', at: '2025-01-01T00:00:00.000Z', policyVersion: 'v', data: { code: 'model_error', error: 'e1' } };
    const now = { ...old, at: '2025-01-02T00:00:00.000Z', runId: 'r-2', data: { code: 'model_error', error: 'e2' } };
    mkdirSync(join(dir, 'audit'));
    writeFileSync(join(dir, 'audit', 'audit.jsonl'), `${JSON.stringify(old)}\n${JSON.stringify(now)}\n`);
    const out = await h.cli(['audit', '--job', 'job-old'], { AIRLOCK_DATA_DIR: dir });
    expect(out).toMatchObject({ code: 0, stderr: '' });
    // A row each (the older one without a run), in the reader's time zone.
    const env = { AIRLOCK_DATA_DIR: dir, TZ: 'UTC' };
    const rows = (await h.cli(['audit', '--job', 'job-old'], env)).stdout.trim().split('\n');
    expect(rows.slice(1).map((r) => r.replace(/ +/g, ' '))).toEqual([
      '2025-01-01 00:00:00 job-old runtime_error model_error: e1',
      '2025-01-02 00:00:00 r-2 job-old runtime_error model_error: e2',
    ]);
    const run = await h.cli(['audit', '--job', 'job-old', '--run', 'r-2'], env);
    expect(run.stdout.trim().split('\n').slice(1).map((r) => r.replace(/ +/g, ' '))).toEqual(['2025-01-02 00:00:00 r-2 job-old runtime_error model_error: e2']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
