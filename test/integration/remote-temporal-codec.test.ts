import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { temporalIsLocal } from '../../host/temporal/locality';
import { JobHarness } from '../helpers/job-harness';
import { spawnNode } from '../helpers/processes';

/**
 * History on a Temporal server elsewhere is encrypted by default: a worker
 * pointed at another machine without payload keys stops at start saying
 * what to do (or runs with AIRLOCK_CODEC=off), and `airlock setup` makes
 * the keys once, for every machine to share.
 */
let dir: string;
let h: JobHarness | undefined;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-remote-codec-'));
});
afterAll(async () => {
  await h?.close();
  rmSync(dir, { recursive: true, force: true });
});

test('which Temporal addresses are this machine', () => {
  for (const local of ['localhost:7233', '127.0.0.1:7233', '127.3.4.5:7233', '[::1]:7233']) expect(temporalIsLocal(local)).toBe(true);
  for (const remote of ['temporal.lan:7233', '203.0.113.7:7233', '[2001:db8::1]:7233']) expect(temporalIsLocal(remote)).toBe(false);
});

test('a worker pointed at another machine without payload keys stops at start, in one line saying what to do', async () => {
  const env = { PATH: process.env.PATH, HOME: process.env.HOME, TEMPORAL_ADDRESS: '203.0.113.7:7233', AIRLOCK_DATA_DIR: join(dir, 'data') };
  const worker = spawnNode('dist/workers/airlock-judge.js', [], env);
  expect(await worker.exited()).not.toBe(0);
  const lines = worker.output().trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).toMatch(/AIRLOCK_CODEC: TEMPORAL_ADDRESS 203\.0\.113\.7:7233 is another machine.*run `airlock setup` \(it creates .*codec\.yaml\).*or set AIRLOCK_CODEC=off/);
  expect(lines[0]).not.toMatch(/\n\s+at /);
});

test('`airlock setup --codec` creates the keys once (0600); without it, with Temporal on this machine, it makes none', async () => {
  h = await JobHarness.create();
  const data = join(dir, 'setup-data');
  const first = await h.cli(['setup', '--codec', '--json'], { AIRLOCK_DATA_DIR: data });
  expect(first.code).toBe(0);
  const keys = join(data, 'keys', 'codec.yaml');
  expect(JSON.parse(first.stdout)).toMatchObject({ codecKeys: { file: keys, created: true } });
  expect(statSync(keys).mode & 0o777).toBe(0o600);
  const again = await h.cli(['setup', '--codec'], { AIRLOCK_DATA_DIR: data });
  expect(again.stdout).toContain(`payload encryption keys: ${keys} already exists`);
  // Without --codec and with Temporal on this machine, setup makes none.
  const plain = join(dir, 'plain-data');
  expect((await h.cli(['setup'], { AIRLOCK_DATA_DIR: plain })).code).toBe(0);
  expect(existsSync(join(plain, 'keys', 'codec.yaml'))).toBe(false);
});
