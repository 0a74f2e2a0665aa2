import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { JobHarness } from '../helpers/job-harness';

/**
 * Bulk moves checked on the real places before anything moves: a folder
 * and its alias, one file reached by two names, a chain through an alias,
 * the root itself and a mount point are refused whole, with the reason
 * told to the model, never moved halfway and never retried.
 */
let h: JobHarness;
let mounted: string | undefined;

beforeAll(async () => {
  // Bulk moves allowed outright: only the tool's own checks stand in the way.
  h = await JobHarness.create({ rules: { version: 1, rules: [] } });
});
afterAll(async () => {
  if (mounted !== undefined) execFileSync('umount', [mounted]);
  await h.close();
});

async function run(name: string, moves: ReadonlyArray<{ from: string; to: string }>): Promise<string> {
  const { jobId } = await h.start({
    jobId: name,
    script: { turns: [{ tool_calls: [{ name: 'fs_move_many', arguments: { moves } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'tried' } }] }] },
  });
  expect((await h.result(jobId)).status).toBe('completed');
  return h.toolResults(jobId).get('call_0_0') ?? '';
}

/** `<name>/` with g.txt and f.txt, and `<name>-alias` linking to it, inside the root. */
function folderWithAlias(name: string): string {
  const dir = join(h.root, name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'g.txt'), 'g');
  writeFileSync(join(dir, 'f.txt'), 'f');
  symlinkSync(dir, join(h.root, `${name}-alias`));
  return dir;
}

test('a folder and a file inside it reached through an alias: refused before anything moves', async () => {
  const dir = folderWithAlias('adir');
  const told = await run('alias-overlap', [
    { from: 'adir', to: 'bdir' },
    { from: 'adir-alias/g.txt', to: 'g2.txt' },
  ]);
  expect(told).toMatch(/nothing was moved: .*with links resolved, the source of entry 2 \(.*adir\/g\.txt\) lies inside the source of entry 1/);
  expect(readdirSync(dir).sort()).toEqual(['f.txt', 'g.txt']);
  expect(existsSync(join(h.root, 'bdir'))).toBe(false);
  expect(existsSync(join(h.root, 'g2.txt'))).toBe(false);
});

test('one file under two names: refused before anything moves', async () => {
  const dir = folderWithAlias('cdir');
  const told = await run('alias-same-file', [
    { from: 'cdir/f.txt', to: 'one.txt' },
    { from: 'cdir-alias/f.txt', to: 'two.txt' },
  ]);
  expect(told).toMatch(/nothing was moved: .*with links resolved, entries 1 and 2 both move .*cdir\/f\.txt/);
  expect(readdirSync(dir).sort()).toEqual(['f.txt', 'g.txt']);
  expect(existsSync(join(h.root, 'one.txt'))).toBe(false);
});

test('a chain through an alias (a move into a place another entry empties): refused before anything moves', async () => {
  const dir = folderWithAlias('edir');
  writeFileSync(join(h.root, 'h.txt'), 'h');
  const told = await run('alias-chain', [
    { from: 'edir/g.txt', to: 'moved-g.txt' },
    { from: 'h.txt', to: 'edir-alias/g.txt' },
  ]);
  expect(told).toMatch(/nothing was moved: .*with links resolved, entry 2 moves to .*edir\/g\.txt, which entry 1 moves away/);
  expect(readdirSync(dir).sort()).toEqual(['f.txt', 'g.txt']);
  expect(existsSync(join(h.root, 'h.txt'))).toBe(true);
});

test('the root itself: a clear refusal the model reads, not a retried failure', async () => {
  mkdirSync(join(h.root, 'sub'), { recursive: true });
  const told = await run('root-itself', [{ from: '.', to: 'sub/moved' }]);
  expect(told).toMatch(/^Error: invalid arguments for fs_move_many \(paths taken inside the allowed roots\): moves: entry 1 moves .* into itself/);
  expect(existsSync(join(h.root, 'sub', 'moved'))).toBe(false);
  // Refused by the job before any tools activity: nothing was attempted, so nothing was retried.
  const history = await h.env.client.workflow.getHandle('root-itself').fetchHistory();
  expect((history.events ?? []).filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'prepareApproval' || e.activityTaskFailedEventAttributes)).toEqual([]);
});

test('a mount point as a source: refused before anything moves', async () => {
  const point = join(h.root, 'mnt');
  mkdirSync(point);
  execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'none', point]);
  mounted = point;
  writeFileSync(join(point, 'inside.txt'), 'i');
  const told = await run('mount-point', [{ from: 'mnt', to: 'mnt2' }]);
  expect(told).toMatch(/nothing was moved: .*mnt is a mount point \(another file system starts there\)/);
  expect(existsSync(join(point, 'inside.txt'))).toBe(true);
  expect(existsSync(join(h.root, 'mnt2'))).toBe(false);
});
