import { generateKeyPairSync } from 'node:crypto';
import { linkSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { defaultRules } from '../../core/policy/default-rules';
import { createFsTools } from '../../host/tools/fs-tools';
import { Roots } from '../../host/fs/roots';
import { JobHarness } from '../helpers/job-harness';

/**
 * Two windows between a check and a change, closed: a move never replaces
 * a destination that appears after its check, and a write to a file that
 * has other names (a hard link, here to a file outside the roots) is shown
 * as such and needs approval under the built-in rules.
 */
let dir: string;
let h: JobHarness | undefined;
const alice = generateKeyPairSync('ed25519');

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-windows-'));
});
afterAll(async () => {
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('fs_move without overwrite: a destination created after the check is not replaced, and nothing moves', async () => {
  const root = join(dir, 'move-root');
  mkdirSync(root);
  writeFileSync(join(root, 'from.txt'), 'mine');
  const fs = createFsTools(await Roots.create([root]), { beforeMove: async () => writeFileSync(join(root, 'to.txt'), 'appeared meanwhile') });
  const outcome = await fs.fs_move({ from: join(root, 'from.txt'), to: join(root, 'to.txt'), overwrite: false });
  expect(outcome).toEqual({ ok: false, output: expect.stringMatching(/^Refused: .*to\.txt appeared after it was checked; nothing was moved or replaced/) });
  expect(readFileSync(join(root, 'to.txt'), 'utf8')).toBe('appeared meanwhile');
  expect(readFileSync(join(root, 'from.txt'), 'utf8')).toBe('mine');
  // Without a race it moves, keeping the file (same inode: link, then unlink).
  const plain = createFsTools(await Roots.create([root]));
  expect(await plain.fs_move({ from: join(root, 'from.txt'), to: join(root, 'moved.txt'), overwrite: false })).toMatchObject({ ok: true });
  expect(readFileSync(join(root, 'moved.txt'), 'utf8')).toBe('mine');
});

test('a write to a file with another name outside the roots parks under the built-in rules, and the card says it has two names', async () => {
  h = await JobHarness.create({ rules: defaultRules, reviewerKeys: new Map([['alice', alice.publicKey]]) });
  const outside = join(dir, 'outside.txt');
  writeFileSync(outside, 'outside the roots\n');
  linkSync(outside, join(h.root, 'notes.txt'));
  const { jobId } = await h.start({
    script: {
      turns: [
        { tool_calls: [{ name: 'fs_write', arguments: { path: 'notes.txt', content: 'appended\n', mode: 'append' } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] },
      ],
    },
  });
  const parked = await h.waitForPending(jobId);
  expect(parked.pending[0]).toMatchObject({ ruleId: 'approve-hard-linked-writes', observed: [{ links: 2 }] });
  const shown = await h.cli(['show', jobId]);
  expect(shown.stdout).toMatch(/2 names \(hard links: changing it changes it under every name\)/);
  expect(readFileSync(outside, 'utf8')).toBe('outside the roots\n');
});
