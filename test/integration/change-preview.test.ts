import { chmodSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { freePort } from '../helpers/ports';
import { startInboxServer, type InboxServer } from '../../servers/inbox/inbox-server';
import { inboxSite } from '../../servers/inbox/site';
import { parseConfig } from '../../core/config/config';
import { cardsMarkdown } from '../../core/reviewer/approval-card';
import { JobHarness } from '../helpers/job-harness';

/**
 * What a parked call changes, made by the real tools activity on real files
 * and shown on the card: a write's diff (text, binary, too large, secrets
 * masked), a mode in rwx form, a bulk move's table.
 */

const SECRET = 'hunter2-in-the-new-config';

let h: JobHarness;
let inbox: InboxServer;
beforeAll(async () => {
  h = await JobHarness.create({
    rules: {
      version: 1,
      rules: [{ id: 'look-at-changes', version: 1, name: 'file changes', scope: { categories: ['file_change'] }, action: 'request_approval' }],
    },
  });
  const config = parseConfig({ TEMPORAL_ADDRESS: h.env.address, TEMPORAL_NAMESPACE: h.env.namespace, AIRLOCK_DATA_DIR: join(h.dir, 'data'), AIRLOCK_INBOX_LISTEN: `127.0.0.1:${await freePort()}` });
  inbox = await startInboxServer({ config, site: inboxSite(config), cli: 'airlock', log: () => undefined });
});
afterAll(async () => {
  await inbox?.close();
  await h.close();
});

/** One job, one batch of calls, every one parked; the cards as `airlock show` prints them and the job's `--json` cards. */
async function parkBatch(name: string, calls: Array<{ name: string; arguments: Record<string, unknown> }>) {
  const { jobId } = await h.start({
    jobId: `change-${name}-${Date.now()}`,
    goal: `tidy the configs (${name})`,
    script: { turns: [{ content: 'These need changing.', tool_calls: calls }, { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] }] },
  });
  const state = await h.waitForPending(jobId, calls.length);
  expect(state.pending).toHaveLength(calls.length);
  const shown = await h.cli(['show', jobId]);
  expect(shown).toMatchObject({ code: 0, stderr: '' });
  const json = await h.cli(['show', jobId, '--json']);
  const cards = (JSON.parse(json.stdout) as { cards: Array<{ change?: unknown; operation: { tool: string } }> }).cards;
  return { jobId, state, text: shown.stdout, cards };
}

const parkedState = async (jobId: string) => ({ state: await h.state(jobId) });

/** The lines from the one starting with `first` on, as many as `expected` has, indentation dropped. */
function block(text: string, first: string, count: number): string[] {
  const lines = text.split('\n').map((l) => l.trim());
  const at = lines.findIndex((l) => l.startsWith(first));
  return at < 0 ? [] : lines.slice(at, at + count);
}

describe('the card shows what a call changes', () => {
  test('an overwrite of a text file: a unified diff with context, the secret in it masked on every surface', async () => {
    const before = Array.from({ length: 30 }, (_, i) => `setting_${i} = ${i}`).join('\n') + '\n';
    writeFileSync(join(h.root, 'app.conf'), before);
    const after = before.replace('setting_12 = 12\n', `setting_12 = 13\npassword = ${SECRET}\n`);
    const { text, cards, jobId } = await parkBatch('text', [{ name: 'fs_write', arguments: { path: 'app.conf', content: after, mode: 'overwrite' } }]);

    expect(text).toContain(`changes: ${join(h.root, 'app.conf')}: +2 −1 lines`);
    const diff = ['@@ -10,7 +10,8 @@', ' setting_9 = 9', ' setting_10 = 10', ' setting_11 = 11', '-setting_12 = 12', '+setting_12 = 13', '+password = ***', ' setting_13 = 13'];
    for (const line of diff) expect(text).toContain(`    ${line}\n`);
    expect(text).not.toContain(SECRET);
    expect(cards[0]?.change).toMatchObject({ kind: 'diff', added: 2, removed: 1, omitted: 0 });
    expect(JSON.stringify(cards)).not.toContain(SECRET);
    // The Web UI's card: a fenced diff block under the item.
    const md = cardsMarkdown(cards as never, Date.now());
    expect(md).toContain('  ```diff\n  @@ -10,7 +10,8 @@\n');
    expect(md).toContain('  +password = ***\n');
    // The approval page: a "What changes" section, each diff line marked for its colour.
    const { state } = await parkedState(jobId);
    const page = await (await fetch(`${inbox.url}/jobs/${encodeURIComponent(jobId)}/requests/${state.pending[0]?.requestId ?? ''}`)).text();
    expect(page).toContain('<summary>What changes</summary>');
    expect(page).toContain('<span class="del">-setting_12 = 12</span>\n<span class="add">+setting_12 = 13</span>\n<span class="add">+password = ***</span>');
    expect(page).not.toContain(SECRET);
    // The job's state view, what any Temporal client queries, masks it too.
    expect(JSON.stringify(await h.state(jobId))).not.toContain(SECRET);
  });

  test('a new file is all additions; an append shows the end it adds to', async () => {
    writeFileSync(join(h.root, 'log.txt'), 'one\ntwo\nthree\nfour\nfive\n');
    const { text } = await parkBatch('new-append', [
      { name: 'fs_write', arguments: { path: 'fresh.txt', content: 'alpha\nbeta\n', mode: 'create' } },
      { name: 'fs_write', arguments: { path: 'log.txt', content: 'six\n', mode: 'append' } },
    ]);
    const fresh = [`changes: ${join(h.root, 'fresh.txt')}: +2 −0 lines`, '@@ -0,0 +1,2 @@', '+alpha', '+beta'];
    expect(block(text, fresh[0] ?? '', 4)).toEqual(fresh);
    const appended = [`changes: ${join(h.root, 'log.txt')}: +1 −0 lines`, '@@ -3,3 +3,4 @@', 'three', 'four', 'five', '+six'];
    expect(block(text, appended[0] ?? '', 6)).toEqual(appended);
  });

  test('binary content, a file too large to compare, and a long diff capped', async () => {
    writeFileSync(join(h.root, 'image.bin'), Buffer.from([0, 1, 2, 3, 255, 0, 7]));
    writeFileSync(join(h.root, 'huge.txt'), 'z'.repeat(600 * 1024));
    writeFileSync(join(h.root, 'list.txt'), '');
    const long = Array.from({ length: 500 }, (_, i) => `entry ${i}`).join('\n') + '\n';
    const { text, cards } = await parkBatch('limits', [
      { name: 'fs_write', arguments: { path: 'image.bin', content: 'now text', mode: 'overwrite' } },
      { name: 'fs_write', arguments: { path: 'huge.txt', content: 'small', mode: 'overwrite' } },
      { name: 'fs_write', arguments: { path: 'list.txt', content: long, mode: 'overwrite' } },
    ]);
    expect(text).toContain(`changes: ${join(h.root, 'image.bin')}: binary, 7 → 8 bytes`);
    expect(text).toContain(`changes: ${join(h.root, 'huge.txt')}: no diff: the file is too large to compare (600 KiB)`);
    expect(text).toContain(`changes: ${join(h.root, 'list.txt')}: +500 −0 lines (421 more diff lines not shown)`);
    const capped = cards.find((c) => JSON.stringify(c.change).includes('list.txt'))?.change as { lines: string[] };
    expect(capped.lines).toHaveLength(80);
  });

  test('a mode change in rwx form, before → after; a bulk move as a table', async () => {
    writeFileSync(join(h.root, 'script.sh'), 'echo hi\n');
    chmodSync(join(h.root, 'script.sh'), 0o644);
    mkdirSync(join(h.root, 'inbox'));
    for (const n of ['a', 'b', 'c']) writeFileSync(join(h.root, 'inbox', `${n}.txt`), n.repeat(2048));
    const { text, cards } = await parkBatch('mode-moves', [
      { name: 'fs_chmod', arguments: { path: 'script.sh', mode: '750' } },
      { name: 'fs_move_many', arguments: { moves: ['a', 'b', 'c'].map((n) => ({ from: `inbox/${n}.txt`, to: `archive-${n}.txt` })) } },
    ]);
    expect(text).toContain(`changes: ${join(h.root, 'script.sh')}: rw-r--r-- → rwxr-x---`);
    expect(block(text, 'changes: 3 entries', 4)).toEqual([
      'changes: 3 entries, 6 KiB in total',
      ...['a', 'b', 'c'].map((n) => `${join(h.root, 'inbox', `${n}.txt`)} → ${join(h.root, `archive-${n}.txt`)}`),
    ]);
    expect(cards.find((c) => c.operation.tool === 'fs_move_many')?.change).toMatchObject({ kind: 'moves', more: 0, rows: [{ from: join(h.root, 'inbox', 'a.txt') }, {}, {}] });
  });
});
