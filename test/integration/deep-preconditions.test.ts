import { existsSync, mkdirSync, readFileSync, renameSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { JobHarness } from '../helpers/job-harness';

/** Approved folders are approved with everything below them: a change anywhere below stops the call. */
let h: JobHarness;

beforeAll(async () => {
  h = await JobHarness.create({
    rules: {
      version: 1,
      rules: [{ id: 'approve-deletes', version: 1, name: 'Deleting needs approval', scope: { categories: ['delete'] }, action: 'request_approval' }],
    },
  });
});
afterAll(async () => h.close());
afterEach(async () => h.terminateRunning());

/** cache/{a.txt, sub/b.txt}: 3 entries, 2 bytes below. */
function plantCache(name: string): string {
  const folder = join(h.root, name);
  mkdirSync(join(folder, 'sub'), { recursive: true });
  writeFileSync(join(folder, 'a.txt'), 'a');
  writeFileSync(join(folder, 'sub', 'b.txt'), 'b');
  return folder;
}

const deleteCache = (name: string) => ({ name: 'fs_delete', arguments: { path: name, recursive: true } });
const done = { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] };

test('an approved recursive delete of an unchanged folder runs', async () => {
  const folder = plantCache('unchanged');
  const { jobId } = await h.start({ script: { turns: [{ tool_calls: [deleteCache('unchanged')] }, done] } });
  const parked = await h.waitForPending(jobId);
  expect(parked.pending[0]!.observed[0]).toMatchObject({ type: 'directory', entries: 2, tree: { complete: true, entries: 3, bytes: 2 } });
  await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(h.toolResults(jobId).get('call_0_0')).toBe(`deleted ${folder}`);
  expect(existsSync(folder)).toBe(false);
});

test('a file moved into a subfolder of an approved folder stops the recursive delete, and the model is told what changed', async () => {
  const folder = plantCache('cache');
  writeFileSync(join(h.root, 'keep-me.txt'), 'precious');
  const { jobId } = await h.start({ script: { turns: [{ tool_calls: [deleteCache('cache')] }, done] } });
  await h.waitForPending(jobId);
  // Only cache/sub changes: cache's own entry count and mtime stay as approved.
  renameSync(join(h.root, 'keep-me.txt'), join(folder, 'sub', 'keep-me.txt'));
  expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: true });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(readFileSync(join(folder, 'sub', 'keep-me.txt'), 'utf8')).toBe('precious');
  expect(h.toolResults(jobId).get('call_0_0')).toBe(
    `Not executed: the approved call no longer holds: the target changed since it was approved: ${folder}: 1 entry added below (entries 3 → 4, 2 → 10 bytes)`,
  );
  expect(h.audit(jobId, 'tool_executed')).toHaveLength(0);
});

test('a file moved into the approved folder by an earlier call of the same batch stops the delete', async () => {
  const folder = plantCache('cache2');
  writeFileSync(join(h.root, 'report.txt'), 'quarterly');
  const { jobId } = await h.start({
    script: {
      turns: [{ tool_calls: [{ name: 'fs_move', arguments: { from: 'report.txt', to: 'cache2/sub/report.txt' } }, deleteCache('cache2')] }, done],
    },
  });
  await h.waitForPending(jobId);
  // Parked: the move has not run yet, so the reviewer approves cache2 as it was.
  expect(existsSync(join(h.root, 'report.txt'))).toBe(true);
  await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  const results = h.toolResults(jobId);
  expect(results.get('call_0_0')).toBe(`moved ${join(h.root, 'report.txt')} to ${join(folder, 'sub', 'report.txt')}`);
  expect(results.get('call_0_1')).toBe(
    `Not executed: the approved call no longer holds: the target changed since it was approved: ${folder}: 1 entry added below (entries 3 → 4, 2 → 11 bytes)`,
  );
  expect(readFileSync(join(folder, 'sub', 'report.txt'), 'utf8')).toBe('quarterly');
  expect(h.audit(jobId, 'tool_executed').map((e) => e.data.toolName)).toEqual(['fs_move']);
});

test('a file replaced by a symbolic link after approval is refused: "replaced by a symbolic link"', async () => {
  const file = join(h.root, 'notes.txt');
  writeFileSync(file, 'notes');
  writeFileSync(join(h.root, 'elsewhere.txt'), 'elsewhere');
  const { jobId } = await h.start({ script: { turns: [{ tool_calls: [{ name: 'fs_delete', arguments: { path: 'notes.txt' } }] }, done] } });
  await h.waitForPending(jobId);
  unlinkSync(file);
  symlinkSync(join(h.root, 'elsewhere.txt'), file);
  await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(h.toolResults(jobId).get('call_0_0')).toBe(
    `Not executed: the approved call no longer holds: the target changed since it was approved: ${file}: the file was replaced by a symbolic link`,
  );
  expect(readFileSync(file, 'utf8')).toBe('elsewhere');
});
