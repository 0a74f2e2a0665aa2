import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { WorkflowFailedError } from '@temporalio/client';
import { CancelledFailure, TerminatedFailure } from '@temporalio/common';
import { statusKey } from '../../core/temporal/search-attributes';
import { repoRoot, spawnNode } from '../helpers/processes';
import { JobHarness } from '../helpers/job-harness';

/** In the model's own words: a secret it read must not reach any surface. */
const SECRET = 'hunter2-never-shown';
const STATED = `The cache folder is stale, so I list the root and remove it. The config said PASSWORD=${SECRET}.`;

let h: JobHarness;
beforeAll(async () => {
  h = await JobHarness.create({
    rules: {
      version: 1,
      rules: [
        {
          id: 'approve-deletes',
          version: 1,
          name: 'deletes',
          instruction: 'a person looks first',
          scope: { categories: ['delete'] },
          action: 'request_approval',
          approval: { editable: ['recursive'] },
        },
      ],
    },
  });
});
afterAll(async () => h.close());

/** A job parked on deleting a folder with two files, proposed beside a listing of the root. */
async function parkFolderDelete(folder: string): Promise<{ jobId: string; requestId: string }> {
  mkdirSync(join(h.root, folder));
  writeFileSync(join(h.root, folder, 'a.bin'), 'x'.repeat(1000));
  writeFileSync(join(h.root, folder, 'b.bin'), 'y'.repeat(24));
  const { jobId } = await h.start({
    goal: `free space in ${folder}`,
    jobId: `card-${folder}-${Date.now()}`,
    script: {
      turns: [
        {
          content: STATED,
          tool_calls: [
            { name: 'fs_list', arguments: { path: '.' } },
            { name: 'fs_delete', arguments: { path: folder, recursive: true } },
          ],
        },
        { tool_calls: [{ name: 'complete', arguments: { summary: `removed ${folder}` } }] },
      ],
    },
  });
  const state = await h.waitForPending(jobId);
  return { jobId, requestId: state.pending[0]?.requestId ?? '' };
}

/** `airlock pending` until visibility lists (or stops listing) the job. */
async function pendingUntil(args: string[], listed: (stdout: string) => boolean): Promise<string> {
  let out = await h.cli(args);
  for (let i = 0; i < 75 && !listed(out.stdout); i++) {
    await new Promise((r) => setTimeout(r, 200));
    out = await h.cli(args);
  }
  expect(out).toMatchObject({ code: 0, stderr: '' });
  return out.stdout;
}

/** The card fields every surface shows for the parked folder delete. */
function expectCardText(text: string, jobId: string, requestId: string, folder: string): void {
  expect(text).toContain(`request ${requestId}: fs_delete ${join(h.root, folder)}`);
  expect(text).toContain(`target ${join(h.root, folder)}: folder, 2 files, 2 entries, 1 KiB below`);
  expect(text).toContain('rule approve-deletes v1: deletes — a person looks first');
  expect(text).toContain("the model's reason:");
  expect(text).toContain('The cache folder is stale, so I list the root and remove it. The config said PASSWORD=***');
  expect(text).toContain(`fs_list ${h.root}: allowed (runs once the batch is decided)`);
  expect(text).toContain('may edit: recursive (this call only; editing creates a new fingerprint)');
  expect(text).toMatch(/requested by tester, waiting \d+s, expires in 23h \(/);
  expect(text).toContain(`approve: npx airlock approve ${jobId} --request ${requestId}`);
  expect(text).toContain(`deny:    npx airlock deny ${jobId} --request ${requestId} --reason TEXT`);
  expect(text).not.toContain(SECRET);
}

describe('a parked job', () => {
  let jobId: string;
  let requestId: string;
  beforeAll(async () => {
    ({ jobId, requestId } = await parkFolderDelete('cache'));
  });

  test('`pending` is a table with a count line and the hint; --card and show print the whole card', async () => {
    const table = await pendingUntil(['pending'], (s) => s.includes(jobId));
    const lines = table.split('\n');
    expect(lines[0]).toMatch(/^JOB +REQUEST +TOOL +TARGET +RULE +WAITING +EXPIRES$/);
    const row = lines.find((l) => l.startsWith(jobId)) ?? '';
    expect(row.split(/ {2,}/)).toEqual([jobId, requestId.slice(0, 8), 'fs_delete', expect.stringMatching(/^\/.*cache$|…$/), 'approve-deletes v1', expect.stringMatching(/^\d+s$/), 'in 23h']);
    expect(table).toMatch(/^\d+ requests? waiting in \d+ jobs?$/m);
    expect(table).toContain('npx airlock pending --card, or npx airlock show JOB');

    const cards = await pendingUntil(['pending', '--card'], (s) => s.includes(jobId));
    expect(cards).toContain(`job ${jobId}: free space in cache`);
    expectCardText(cards, jobId, requestId, 'cache');

    const shown = await h.cli(['show', jobId]);
    expect(shown).toMatchObject({ code: 0, stderr: '' });
    expect(shown.stdout).toContain(`job ${jobId}: awaiting_approval`);
    expectCardText(shown.stdout, jobId, requestId, 'cache');
  });

  test('run through an installed bin on PATH, the commands say `airlock`', async () => {
    const bin = mkdtempSync(join(tmpdir(), 'airlock-bin-'));
    try {
      symlinkSync(join(repoRoot, 'bin', 'airlock.js'), join(bin, 'airlock'));
      const shown = await h.cli(['show', jobId], { PATH: `${bin}:${process.env.PATH ?? ''}` });
      expect(shown.stdout).toContain(`approve: airlock approve ${jobId} --request ${requestId}`);
      // Started by npm or npx, it is `npx airlock` whatever PATH holds.
      const viaNpx = await h.cli(['show', jobId], { PATH: `${bin}:${process.env.PATH ?? ''}`, npm_command: 'exec' });
      expect(viaNpx.stdout).toContain(`approve: npx airlock approve ${jobId} --request ${requestId}`);
    } finally {
      rmSync(bin, { recursive: true, force: true });
    }
  });

  test('pending --watch lists again every interval and ends cleanly on Ctrl-C', async () => {
    const watch = spawnNode('bin/airlock.js', ['pending', '--watch', '--interval', '1s'], h.processEnv());
    try {
      // Not a terminal: each listing is headed by a line with its time.
      await watch.waitFor(new RegExp(`---[^]*${jobId}[^]*---[^]*---[^]*${jobId}`));
    } finally {
      watch.child.kill('SIGINT');
    }
    expect(await watch.exited()).toBe(0);
    expect(watch.output()).not.toMatch(/Error|airlock pending:/);
    const bad = await h.cli(['pending', '--watch', '--interval', '10ms']);
    expect(bad).toMatchObject({ code: 2, stderr: 'airlock pending: --interval takes a duration of at least 1s (like 5s or 1m), got "10ms"\n' });
  });

  test('--json keeps its fields and adds the cards', async () => {
    const out = await pendingUntil(['pending', '--json'], (s) => s.includes(jobId));
    const jobs = JSON.parse(out) as Array<{ jobId: string; goal: string; pending: Array<{ nonce: string; requestId: string }>; cards: Array<Record<string, unknown>> }>;
    const job = jobs.find((j) => j.jobId === jobId);
    expect(job?.goal).toBe('free space in cache');
    expect(job?.pending[0]?.nonce).toMatch(/^[0-9a-f]{32}$/);
    expect(job?.cards[0]).toMatchObject({
      requestId,
      statedReason: expect.stringContaining('PASSWORD=***'),
      observed: [{ files: 2, entries: 2, bytes: 1024 }],
      otherCalls: [{ tool: 'fs_list', decision: 'allowed (runs once the batch is decided)' }],
      editable: ['recursive'],
      editNote: 'this call only; editing creates a new fingerprint',
      expires: 'expires in 23h',
      commands: { approve: `npx airlock approve ${jobId} --request ${requestId}` },
    });
    expect(out).not.toContain(SECRET);
    const shown = JSON.parse((await h.cli(['show', jobId, '--json'])).stdout) as { status: string; executionStatus: string; cards: unknown[] };
    expect(shown).toMatchObject({ status: 'awaiting_approval', executionStatus: 'RUNNING', cards: [expect.objectContaining({ requestId })] });
  });

  test("the Web UI's current details hold the card with the job's own id", async () => {
    const metadata = await h.airlock.client.workflow.getHandle(jobId).query<{ currentDetails: string }>('__temporal_workflow_metadata');
    const text = metadata.currentDetails;
    expect(text).toContain('### Waiting for approval (1)');
    expect(text).toContain('folder, 2 files, 2 entries, 1 KiB below');
    expect(text).toContain('`approve-deletes` v1');
    expect(text).toContain('PASSWORD=\\*\\*\\*');
    expect(text).toContain('this call only; editing creates a new fingerprint');
    expect(text).toContain(`npx airlock approve ${jobId} \\\n  --request ${requestId}`);
    expect(text).not.toContain(SECRET);
  });

  test('approve --set prints the edit; the edited call fails, and show reports it failed, not executed', async () => {
    const approved = await h.cli(['approve', jobId, '--request', requestId.slice(0, 8), '--set', 'recursive=false', '--reviewer', 'alice', '--reason', 'keep it shallow']);
    expect(approved).toMatchObject({ code: 0, stderr: '' });
    expect(approved.stdout).toMatch(/^accepted: request .* is approved: fs_delete .* \(edited; new fingerprint [0-9a-f]{64}\)\n {2}recursive: true → false\n$/);
    expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
    const shown = await h.cli(['show', jobId]);
    expect(shown.stdout).toContain(`job ${jobId}: completed`);
    expect(shown.stdout).toContain('the model says: removed cache');
    // The facts lead: the model's summary claims the removal, the job's record says the approved delete failed.
    expect(shown.stdout).toMatch(/what happened: 0 of 1 approved call ran: fs_delete \S+ failed \(/);
    expect(shown.stdout).toMatch(new RegExp(`approved fs_delete \\(request ${requestId}\\) by alice: keep it shallow — FAILED: \\S`));
    expect(shown.stdout).not.toMatch(/— executed/);
    expect(shown.stdout).toMatch(/, 1 approved call\(s\) failed,/);
    const json = JSON.parse((await h.cli(['show', jobId, '--json'])).stdout) as { decided: Array<{ requestId: string; outcome: string }> };
    expect(json.decided.find((d) => d.requestId === requestId)?.outcome).toBe('failed');
  });
});

test('an approved call that runs is reported executed', async () => {
  const { jobId, requestId } = await parkFolderDelete('gone');
  expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'bob' })).toMatchObject({ accepted: true });
  await h.result(jobId);
  const shown = await h.cli(['show', jobId]);
  expect(shown.stdout).toContain(`approved fs_delete (request ${requestId}) by bob — executed`);
});

describe('a job that ends while it waits', () => {
  test('cancelled (Web UI, temporal workflow cancel, a client): cancelled everywhere, and approve says so', async () => {
    const { jobId } = await parkFolderDelete('cancelme');
    const handle = h.airlock.client.workflow.getHandle(jobId);
    await handle.cancel();
    const err = await handle.result().catch((e: unknown) => e);
    expect(err).toBeInstanceOf(WorkflowFailedError);
    expect((err as WorkflowFailedError).cause).toBeInstanceOf(CancelledFailure);
    const described = await handle.describe();
    expect(described.status.name).toBe('CANCELLED');
    // The job set it itself before ending.
    expect(described.typedSearchAttributes.get(statusKey)).toBe('cancelled');
    // A cancel is its own audit event, not an error.
    expect(h.audit(jobId, 'job_cancelled')).toHaveLength(1);
    expect(h.audit(jobId, 'runtime_error').map((e) => e.data.code)).not.toContain('cancelled');

    const shown = await h.cli(['show', jobId]);
    expect(shown).toMatchObject({ code: 0, stderr: '' });
    expect(shown.stdout).toMatch(new RegExp(`^job ${jobId}: cancelled \\(turn 1/`));
    expect(shown.stdout).toContain('undecided when it ended');
    expect(shown.stdout).not.toContain('approve: ');
    await pendingUntil(['pending'], (s) => !s.includes(jobId));

    for (const args of [['approve', jobId], ['deny', jobId, '--reason', 'x']]) {
      const refused = await h.cli(args);
      expect(refused.code).toBe(1);
      expect(refused.stderr.trim()).toBe(`airlock ${args[0]}: job ${jobId} was cancelled; there is nothing left to approve or deny (see \`npx airlock show ${jobId}\`)`);
    }
    // A list filter finds it by its status.
    let found = false;
    for (let i = 0; i < 50 && !found; i++) {
      for await (const info of h.airlock.client.workflow.list({ query: `WorkflowId = "${jobId}" AND AirlockStatus = "cancelled"` })) found = info.workflowId === jobId;
      if (!found) await new Promise((r) => setTimeout(r, 200));
    }
    expect(found).toBe(true);
  });

  test('terminated: it runs no code, so show and pending read Temporal\'s status', async () => {
    const { jobId } = await parkFolderDelete('terminateme');
    const handle = h.airlock.client.workflow.getHandle(jobId);
    await handle.terminate('operator stopped it');
    const err = await handle.result().catch((e: unknown) => e);
    expect((err as WorkflowFailedError).cause).toBeInstanceOf(TerminatedFailure);
    // Its own attribute stays as it last set it: readers must not trust it alone.
    expect((await handle.describe()).typedSearchAttributes.get(statusKey)).toBe('awaiting_approval');

    const shown = await h.cli(['show', jobId]);
    expect(shown).toMatchObject({ code: 0, stderr: '' });
    expect(shown.stdout).toMatch(new RegExp(`^job ${jobId}: terminated \\(it was awaiting_approval\\)`));
    expect(shown.stdout).toContain('undecided when it ended');
    const json = JSON.parse((await h.cli(['show', jobId, '--json'])).stdout) as { status: string; executionStatus: string; cards: unknown[] };
    expect(json).toMatchObject({ status: 'terminated', executionStatus: 'TERMINATED', cards: [] });
    // `pending` lists running jobs only.
    await pendingUntil(['pending'], (s) => !s.includes(jobId));
    const refused = await h.cli(['approve', jobId]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain(`job ${jobId} was terminated; there is nothing left to approve or deny`);
  });
});
