import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { JobHarness } from '../helpers/job-harness';

/** What reaches a reviewer's terminal must hold none of these raw: controls, C1, bidi, invisible. */
// eslint-disable-next-line no-control-regex -- finding control characters is the point
const RAW_UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u061c\u200b\u200e\u200f\u2028-\u202e\u2060-\u206f\ufeff]/;

let h: JobHarness;

beforeAll(async () => {
  h = await JobHarness.create({
    rules: {
      version: 1,
      rules: [
        {
          id: 'approve-deletes',
          version: 1,
          name: 'deletes need \x1b[5mapproval\x1b[0m',
          scope: { categories: ['delete'] },
          action: 'request_approval',
        },
      ],
    },
  });
});
afterAll(async () => h.close());

describe('text from jobs, models, rules and the audit log reaches reviewers escaped', () => {
  const name = 'report\x1b[31mred\u202etxt.exe';
  const goal = 'tidy up\x1b[2J\nrule fake v9: approve me';
  let jobId: string;

  beforeAll(async () => {
    writeFileSync(join(h.root, name), 'old');
    ({ jobId } = await h.start({
      goal,
      script: {
        turns: [
          { tool_calls: [{ name: 'fs_delete', arguments: { path: name } }] },
          { tool_calls: [{ name: 'complete', arguments: { summary: 'done \x1b[32mall\x1b[0m' } }] },
        ],
      },
    }));
    await h.waitForPending(jobId);
  });

  test('pending', async () => {
    // Visibility is eventually consistent: poll until the job is listed.
    let out = await h.cli(['pending']);
    for (let i = 0; i < 50 && !out.stdout.includes(jobId); i++) {
      await new Promise((r) => setTimeout(r, 200));
      out = await h.cli(['pending']);
    }
    expect(out).toMatchObject({ code: 0, stderr: '' });
    expect(out.stdout).not.toMatch(RAW_UNSAFE);
    // The table: the target escaped, then cut in its middle to its column, so the file's name stays in sight.
    expect(out.stdout).toMatch(/fs_delete {2}\/tmp\/\S*…\S*\\x1b\[31mred\\u202etxt\.exe {2}/);
    out = await h.cli(['pending', '--card']);
    expect(out).toMatchObject({ code: 0, stderr: '' });
    expect(out.stdout).not.toMatch(RAW_UNSAFE);
    expect(out.stdout).toContain(`job ${jobId}: tidy up\\x1b[2J\\nrule fake v9: approve me`);
    expect(out.stdout).toContain('report\\x1b[31mred\\u202etxt.exe: file, 3 bytes');
    expect(out.stdout).toContain('/report\\u001b[31mred\\u202etxt.exe","recursive":false}');
    expect(out.stdout).toContain('rule approve-deletes v1: deletes need \\x1b[5mapproval\\x1b[0m');
    // One value, one line: no line of the output comes from the goal's newline.
    expect(out.stdout.split('\n').some((line) => line.startsWith('rule fake'))).toBe(false);
  });

  test('pending --json stays JSON holding the text as it is', async () => {
    const out = await h.cli(['pending', '--json']);
    expect(out.stdout).not.toMatch(RAW_UNSAFE);
    const jobs = JSON.parse(out.stdout) as Array<{ jobId: string; goal: string; pending: Array<{ args: { path: string } }> }>;
    const job = jobs.find((j) => j.jobId === jobId);
    expect(job?.goal).toBe(goal);
    expect(job?.pending[0]?.args.path).toBe(join(h.root, name));
  });

  test('show, deny and show again', async () => {
    const shown = await h.cli(['show', jobId]);
    expect(shown).toMatchObject({ code: 0, stderr: '' });
    expect(shown.stdout).not.toMatch(RAW_UNSAFE);
    expect(shown.stdout).toContain('goal: tidy up\\x1b[2J\\nrule fake v9: approve me');
    expect(shown.stdout).toContain('report\\x1b[31mred\\u202etxt.exe: file, 3 bytes');

    const denied = await h.cli(['deny', jobId, '--reviewer', 'eve\u202e', '--reason', 'no\x1b[31m way\nreally']);
    expect(denied).toMatchObject({ code: 0, stderr: '' });
    expect(denied.stdout).not.toMatch(RAW_UNSAFE);
    expect(denied.stdout).toMatch(/^accepted: request .* is denied: fs_delete \{"path":".*\/report\\u001b\[31mred\\u202etxt\.exe","recursive":false\}\n$/);

    await h.result(jobId);
    const after = await h.cli(['show', jobId]);
    expect(after.stdout).not.toMatch(RAW_UNSAFE);
    expect(after.stdout).toContain('denied fs_delete');
    expect(after.stdout).toContain('by eve\\u202e: no\\x1b[31m way\\nreally');
    expect(after.stdout).toContain('done \\x1b[32mall\\x1b[0m');
  });

  test('errors', async () => {
    const out = await h.cli(['show', 'no\x1b[31m-such-job']);
    expect(out.code).toBe(1);
    expect(out.stderr).not.toMatch(RAW_UNSAFE);
    expect(out.stderr.trim().split('\n')).toHaveLength(1);
    const usage = await h.cli(['approve', 'j', '--set', 'x\x1b[31m']);
    expect(usage.code).toBe(2);
    expect(usage.stderr).not.toMatch(RAW_UNSAFE);
  });
});
