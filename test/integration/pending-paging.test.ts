import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { encodePageToken } from '../../client/page-token';
import { countingClient as countingClientOf } from '../helpers/counting-client';
import { JobHarness } from '../helpers/job-harness';

/**
 * `airlock pending` a page at a time: one visibility call per page, newest
 * jobs first, a token that continues where the page ended, and every page
 * with `--all`. Five jobs park, one after the other, before any test runs.
 */

let h: JobHarness;
/** Oldest first, as they were started. */
const parked: string[] = [];
const newestFirst = () => [...parked].reverse();

beforeAll(async () => {
  h = await JobHarness.create({
    rules: { version: 1, rules: [{ id: 'approve-deletes', version: 1, name: 'deletes', scope: { categories: ['delete'] }, action: 'request_approval' }] },
  });
  for (let i = 0; i < 5; i++) {
    const name = `page${i}.txt`;
    writeFileSync(join(h.root, name), name);
    const { jobId } = await h.start({
      jobId: `paging-${i}-${Date.now()}`,
      goal: `delete ${name}`,
      script: { turns: [{ tool_calls: [{ name: 'fs_delete', arguments: { path: name } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] }] },
    });
    await h.waitForPending(jobId);
    parked.push(jobId);
  }
  // Visibility is eventually consistent: wait until it lists all five.
  for (let i = 0; i < 50 && (await h.airlock.listPending()).length < parked.length; i++) await new Promise((r) => setTimeout(r, 200));
}, 120_000);
afterAll(async () => h.close());

const countingClient = () => countingClientOf(h);

test('one visibility call per page: a page is one call, newest first, and every page is ceil(n / pageSize) calls', async () => {
  const { client, calls } = await countingClient();
  try {
    const pages: string[][] = [];
    let token: Uint8Array | undefined;
    for (;;) {
      calls.length = 0;
      const page = await client.pendingPage({ pageSize: 2, ...(token !== undefined ? { token } : {}) });
      expect(calls).toEqual(['ListWorkflowExecutions']);
      pages.push(page.jobs.map((j) => j.jobId));
      if (page.next === null) break;
      token = page.next;
    }
    expect(pages).toEqual([newestFirst().slice(0, 2), newestFirst().slice(2, 4), newestFirst().slice(4)]);

    calls.length = 0;
    const all = await client.listPending({ pageSize: 2 });
    expect(calls).toEqual(Array.from({ length: Math.ceil(parked.length / 2) }, () => 'ListWorkflowExecutions'));
    expect(all.map((j) => j.jobId)).toEqual(newestFirst());
    for (const job of all) expect(job.pending[0]).toMatchObject({ toolName: 'fs_delete', ruleId: 'approve-deletes' });

    // The inbox's listing: every job, in one call of Temporal's largest page.
    calls.length = 0;
    expect((await client.listPending()).map((j) => j.jobId)).toEqual(newestFirst());
    expect(calls).toEqual(['ListWorkflowExecutions']);
  } finally {
    await client.close();
  }
});

/** The job ids in the rows of `pending`'s table. */
function rows(stdout: string): string[] {
  return stdout
    .split('\n')
    .filter((l) => /^paging-\d/.test(l))
    .map((l) => l.split(/\s+/)[0] ?? '');
}

test('pending --limit 2 shows the two newest and a last line that says more wait, with the token of the next page', async () => {
  const first = await h.cli(['pending', '--limit', '2']);
  expect(first).toMatchObject({ code: 0, stderr: '' });
  expect(rows(first.stdout)).toEqual(newestFirst().slice(0, 2));
  const last = first.stdout.trimEnd().split('\n').pop() ?? '';
  const more = /^2 jobs shown, more are waiting: (?:npx )?airlock pending --all for every one, or (?:npx )?airlock pending --limit 2 --page ([A-Za-z0-9_-]+) for the next 2$/.exec(last);
  expect({ last, matched: more !== null }).toEqual({ last, matched: true });
  const second = await h.cli(['pending', '--limit', '2', '--page', more?.[1] ?? '']);
  expect(rows(second.stdout)).toEqual(newestFirst().slice(2, 4));

  // Every page: all five, and no line about more.
  const all = await h.cli(['pending', '--all']);
  expect(rows(all.stdout)).toEqual(newestFirst());
  expect(all.stdout).not.toMatch(/more are waiting/);
  // The default page holds all five.
  expect(rows((await h.cli(['pending'])).stdout)).toEqual(newestFirst());
});

test('pending --json --limit gives a token, and --page walks the rest: nothing twice, nothing missing', async () => {
  const seen: string[] = [];
  let args = ['pending', '--json', '--limit', '2'];
  for (let page = 0; page < 10; page++) {
    const out = await h.cli(args);
    expect(out).toMatchObject({ code: 0, stderr: '' });
    const body = JSON.parse(out.stdout) as { jobs: Array<{ jobId: string; cards: unknown[] }>; nextPageToken: string | null };
    expect(body.jobs.length).toBeLessThanOrEqual(2);
    for (const job of body.jobs) expect(job.cards).toHaveLength(1);
    seen.push(...body.jobs.map((j) => j.jobId));
    if (body.nextPageToken === null) break;
    expect(body.nextPageToken).toMatch(/^[A-Za-z0-9_-]+$/);
    args = ['pending', '--json', '--limit', '2', '--page', body.nextPageToken];
  }
  expect(seen).toEqual(newestFirst());

  // --json alone, and --all, stay the bare array of every job that scripts read before paging.
  for (const flags of [['--json'], ['--json', '--all'], ['--json', '--all', '--limit', '2']]) {
    const out = await h.cli(['pending', ...flags]);
    const body = JSON.parse(out.stdout) as unknown;
    expect({ flags, ids: Array.isArray(body) ? body.map((j: { jobId: string }) => j.jobId) : body }).toEqual({ flags, ids: newestFirst() });
  }
});

/** Well formed, as the server's would be. */
const token = encodePageToken(Buffer.from('{"LastStartTime":"2026-01-01T00:00:00Z","LastRunID":"r"}'));

test.each([
  [['--limit', '0'], /^airlock pending: --limit takes a whole number of jobs between 1 and 1000, got "0"$/m],
  [['--limit', 'x'], /^airlock pending: --limit takes a whole number of jobs between 1 and 1000, got "x"$/m],
  [['--limit', '1001'], /^airlock pending: --limit takes a whole number/],
  [['--page', 'garbage'], /^airlock pending: --page takes the nextPageToken a previous `pending --json --limit N` printed/],
  [['--all', '--page', encodePageToken(Buffer.from('x'))], /^airlock pending: --all lists every page; it takes no --page$/m],
  // A token cut short, or with one character changed, is refused before the server is asked.
  [['--page', token.slice(0, -3)], /^airlock pending: --page takes the nextPageToken/],
  [['--page', `${token.slice(0, 10)}${token[10] === 'A' ? 'B' : 'A'}${token.slice(11)}`], /^airlock pending: --page takes the nextPageToken/],
])('pending %j is one clear line and exit 2', async (flags, message) => {
  const out = await h.cli(['pending', ...flags]);
  expect(out).toEqual({ code: 2, stdout: '', stderr: expect.stringMatching(message) });
  expect(out.stderr.trimEnd().split('\n')).toHaveLength(1);
});
