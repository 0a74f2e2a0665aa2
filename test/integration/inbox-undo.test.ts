import { undoJobId } from '../../client/airlock-client/undoing';
import { mkdirSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { decideOnCard, outputDir, registerPasskey, startInboxBrowser, type InboxBrowser } from '../helpers/inbox-browser';
import { treeListing } from '../helpers/tree-listing';

/**
 * Undo from the approval page, on a phone-sized headless chromium with a
 * passkey, under the built-in rules: the card of a delete in a root kept
 * for undo says it is reversible; once approved, the page says where to take
 * it back; the job's undo page asks the passkey who asks, starts the undo
 * as a request of its own and opens its card; approving that restores the
 * folder whole.
 */
let b: InboxBrowser;

beforeAll(async () => {
  b = await startInboxBrowser({ undoKeepDays: 7 });
  await registerPasskey(b, 'alice');
});
afterAll(async () => b?.close());

test("at 390×844: the card says reversible, approval points to Undo, and the page's Undo (its own request, approved with the passkey) puts the folder back whole", async () => {
  const { h, page, inbox } = b;
  const folder = join(h.root, 'album');
  mkdirSync(folder);
  for (let i = 0; i < 50; i++) writeFileSync(join(folder, `p${i}.jpg`), `photo ${i}`);
  const before = treeListing(folder);
  const { jobId } = await h.start({
    jobId: `inbox-undo-${Date.now()}`,
    goal: 'free some space',
    script: {
      turns: [
        { content: 'The album looks like a copy.', tool_calls: [{ name: 'fs_delete', arguments: { path: 'album', recursive: true } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] },
      ],
    },
  });
  const requestId = (await h.waitForPending(jobId)).pending[0]?.requestId ?? '';

  await page.goto(`${inbox.url}/jobs/${encodeURIComponent(jobId)}/requests/${encodeURIComponent(requestId)}`);
  expect(await page.textContent('h1')).toMatch(/^Delete album \(folder, 50 files, \d+ bytes\) in root — reversible for 7 days \(airlock undo\)$/);
  expect(await page.isVisible('#undo-later')).toBe(false);
  expect(await decideOnCard(page, 'approve')).toContain('Approved');
  // Once approved: where to take it back.
  expect(await page.isVisible('#undo-later')).toBe(true);
  expect(await page.textContent('#undo-later')).toBe('Changed your mind once it ran? Undo it within 7 days.');
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(existsSync(folder)).toBe(false);

  await page.click('#undo-later a');
  await page.waitForURL(`${inbox.url}/jobs/${encodeURIComponent(jobId)}/undo`);
  const row = page.locator('li.undo-row');
  expect(await row.count()).toBe(1);
  expect(await row.textContent()).toContain(`Put back ${folder}`);
  expect(await row.textContent()).toContain('Deleted by call call_0_0, approved by alice');
  await page.screenshot({ path: join(outputDir, 'inbox-undo.png') });

  // Undo: the passkey says who asks; the undo waits for approval on a card of its own.
  const undoJob = undoJobId(jobId, 'call_0_0');
  await page.click('button.undo');
  await page.waitForURL(new RegExp(`/jobs/${undoJob}/requests/`), { timeout: 60_000 });
  expect(await page.textContent('h1')).toBe(`Undo call call_0_0 of job ${jobId}: put album in root back as it was before that change`);
  expect(existsSync(folder)).toBe(false);
  expect((await h.airlock.state(undoJob)).requester).toBe('alice');
  expect(await decideOnCard(page, 'approve')).toContain('Approved');

  expect(await h.result(undoJob)).toMatchObject({ status: 'completed', facts: { gated: [{ toolName: 'fs_undo', outcome: 'executed', reviewer: 'alice' }] } });
  expect(treeListing(folder)).toEqual(before);
  expect(h.audit(undoJob, 'approval_decided')).toEqual([expect.objectContaining({ data: expect.objectContaining({ decision: 'approve', reviewer: 'alice', signed: true, signedWith: 'passkey' }) })]);

  // Asked again from the page: its card says the tool will refuse it, and why.
  await page.goto(`${inbox.url}/jobs/${encodeURIComponent(jobId)}/undo`);
  await page.click('button.undo');
  await page.waitForURL(new RegExp(`/jobs/${undoJob}/requests/`), { timeout: 60_000 });
  expect(await page.textContent('main')).toMatch(/the tool will refuse this call: call call_0_0 of job .* was already undone/);
});

test('at 390×844: a bulk move\'s card says reversible, and its undo from the page (the moves listed back to front) moves every entry back', async () => {
  const { h, page, inbox } = b;
  mkdirSync(join(h.root, 'phone-in'));
  mkdirSync(join(h.root, 'phone-out'));
  const moves = Array.from({ length: 20 }, (_, i) => {
    writeFileSync(join(h.root, 'phone-in', `clip-${i}.mp4`), `clip ${i}`);
    return { from: `phone-in/clip-${i}.mp4`, to: `phone-out/clip-${i}.mp4` };
  });
  const { jobId } = await h.start({
    jobId: `inbox-undo-bulk-${Date.now()}`,
    goal: 'sort the clips',
    script: { turns: [{ tool_calls: [{ name: 'fs_move_many', arguments: { moves } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] }] },
  });
  const requestId = (await h.waitForPending(jobId)).pending[0]?.requestId ?? '';
  await page.goto(`${inbox.url}/jobs/${encodeURIComponent(jobId)}/requests/${encodeURIComponent(requestId)}`);
  expect(await page.textContent('h1')).toBe('Move 20 entries — reversible for 7 days (airlock undo)');
  expect(await decideOnCard(page, 'approve')).toContain('Approved');
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(existsSync(join(h.root, 'phone-in', 'clip-3.mp4'))).toBe(false);

  await page.goto(`${inbox.url}/jobs/${encodeURIComponent(jobId)}/undo`);
  const row = page.locator('li.undo-row');
  expect(await row.textContent()).toContain('Move back 20 entries (first ');
  expect(await row.textContent()).toContain('Moved away as one set by call call_0_0, approved by alice');
  const undoJob = undoJobId(jobId, 'call_0_0');
  await page.click('button.undo');
  await page.waitForURL(new RegExp(`/jobs/${undoJob}/requests/`), { timeout: 60_000 });
  expect(await page.textContent('h1')).toBe(`Undo call call_0_0 of job ${jobId}: move back what its bulk move of 20 entries moved`);
  expect(await page.textContent('main')).toMatch(/phone-out\/clip-0\.mp4\s*→\s*\S*phone-in\/clip-0\.mp4/);
  await page.screenshot({ path: join(outputDir, 'inbox-undo-bulk.png') });
  expect(await decideOnCard(page, 'approve')).toContain('Approved');
  expect(await h.result(undoJob)).toMatchObject({ status: 'completed', facts: { gated: [{ toolName: 'fs_undo', outcome: 'executed', reviewer: 'alice' }] } });
  for (const m of moves) expect(existsSync(join(h.root, m.from))).toBe(true);
  expect(existsSync(join(h.root, 'phone-out', 'clip-3.mp4'))).toBe(false);
});
