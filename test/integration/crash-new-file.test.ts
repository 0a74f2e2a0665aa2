import { existsSync, mkdtempSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Texts } from '../../core/job/texts';
import { Roots } from '../../host/fs/roots';
import { createFsTools } from '../../host/tools/fs-tools';
import { NEW_FILE_PREFIX } from '../../host/tools/fs-guards';
import { JobHarness } from '../helpers/job-harness';
import { smallFolder, type SmallFolder } from '../helpers/small-fs';

/**
 * A new file appears whole or not at all. A tools worker killed (SIGKILL)
 * half way through writing one leaves the name absent, so the retry can
 * tell the call never took effect and runs it, once; a disk that fills up
 * part way leaves no cut file either.
 */
let h: JobHarness;

beforeAll(async () => {
  h = await JobHarness.create({
    toolsInProcess: false,
    rules: {
      version: 1,
      rules: [{ id: 'approve-writes', version: 1, name: 'Writes need approval', scope: { tools: ['fs_write'] }, action: 'request_approval' }],
    },
  });
});
afterAll(async () => h.close());

test('killed half way through writing a new file: the name stays absent, and the retry writes it whole, once, and says so', async () => {
  const content = `${'0123456789'.repeat(10_000)}\nthe end\n`;
  const dataDir = mkdtempSync(join(h.dir, 'tools-data-'));
  const first = h.spawnToolsWorker({ AIRLOCK_DATA_DIR: dataDir, AIRLOCK_TEST_CRASH_AT: 'mid-write' });
  await first.waitFor(/workers polling airlock-tools/);
  const { jobId } = await h.start({
    jobId: 'crash-new-file',
    script: {
      turns: [
        { tool_calls: [{ name: 'fs_write', arguments: { path: 'report.txt', content, mode: 'create' } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'wrote the report' } }] },
      ],
    },
  });
  await h.waitForPending(jobId);
  expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: true });
  await first.waitFor(/execute paused mid-write/);
  // Half of the content is on disk, under a temporary name; the file's own name does not exist.
  expect(existsSync(join(h.root, 'report.txt'))).toBe(false);
  const partial = readdirSync(h.root).filter((f) => f.startsWith(NEW_FILE_PREFIX));
  expect(partial).toHaveLength(1);
  expect(readFileSync(join(h.root, partial[0]!), 'utf8')).toBe(content.slice(0, Buffer.byteLength(content) >> 1));
  first.child.kill('SIGKILL');
  await first.exited();

  const second = h.spawnToolsWorker({ AIRLOCK_DATA_DIR: dataDir });
  await second.waitFor(/workers polling airlock-tools/);
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(readFileSync(join(h.root, 'report.txt'), 'utf8')).toBe(content);
  expect(h.toolResults(jobId).get('call_0_0')).toBe(`wrote ${Buffer.byteLength(content)} bytes to ${join(h.root, 'report.txt')} (create)\n${Texts.reconciledRanNow}`);
  expect(h.audit(jobId, 'tool_executed')).toEqual([expect.objectContaining({ data: expect.objectContaining({ ok: true, reconciled: 'ran_now' }) })]);
  // What the kill left behind is the killed attempt's temporary file, nothing else.
  expect(readdirSync(h.root).filter((f) => f.startsWith(NEW_FILE_PREFIX))).toEqual(partial);
  second.child.kill('SIGTERM');
  await second.exited();
});

describe('a disk that fills up while a new file is written', () => {
  let small: SmallFolder;
  beforeEach(() => {
    small = smallFolder();
  });
  afterEach(() => small.close());

  test('leaves no file under that name, and the same write succeeds once there is room', async () => {
    const tools = createFsTools(await Roots.create([small.dir]));
    writeFileSync(join(small.dir, 'seed.txt'), 'x');
    small.block('full');
    const content = 'y'.repeat(32 * 1024);
    const failed = await tools.fs_write({ path: 'big.txt', content, mode: 'create' });
    expect(failed).toMatchObject({ ok: false });
    expect(failed.output).toMatch(/ENOSPC|permission denied|EACCES|EROFS/);
    expect(existsSync(join(small.dir, 'big.txt'))).toBe(false);
    expect(readdirSync(small.dir).filter((f) => f.startsWith(NEW_FILE_PREFIX))).toEqual([]);
    small.unblock();
    expect(await tools.fs_write({ path: 'big.txt', content, mode: 'create' })).toMatchObject({ ok: true });
    expect(readFileSync(join(small.dir, 'big.txt'), 'utf8')).toBe(content);
  });
});
