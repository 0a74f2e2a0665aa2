import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataDirLockedError, lockDataDir } from '../../ops/dev/data-lock';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-lock-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const lockFile = () => join(dir, 'dev.lock');

/** A pid that ran a moment ago and is gone now. */
function deadPid(): number {
  const child = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))']);
  return Number(child.stdout.toString());
}

test('a held folder is refused with the holder pid until released; nothing else is left behind', () => {
  const lock = lockDataDir(dir);
  expect(JSON.parse(readFileSync(lockFile(), 'utf8'))).toMatchObject({ schemaVersion: 1, pid: process.pid });
  let refused: unknown;
  try {
    lockDataDir(dir);
  } catch (err) {
    refused = err;
  }
  expect(refused).toBeInstanceOf(DataDirLockedError);
  expect((refused as DataDirLockedError).holder).toBe(process.pid);
  expect((refused as Error).message).toContain(`(pid ${process.pid})`);
  lock.release();
  expect(existsSync(lockFile())).toBe(false);
  lockDataDir(dir).release();
  expect(readdirSync(dir)).toEqual([]);
});

test.each([
  ['a dead holder', () => JSON.stringify({ schemaVersion: 1, pid: deadPid() })],
  // The pid runs again, as another process (started at another time).
  ['a reused pid', () => JSON.stringify({ schemaVersion: 1, pid: process.pid, startTime: '1' })],
  ['a garbled file', () => '{"schemaVersion":1,"pi'],
])('a stale lock (%s) is taken over', (_, content) => {
  writeFileSync(lockFile(), content(), { mode: 0o600 });
  const lock = lockDataDir(dir);
  expect(JSON.parse(readFileSync(lockFile(), 'utf8'))).toMatchObject({ pid: process.pid });
  lock.release();
  expect(existsSync(lockFile())).toBe(false);
});

test("release leaves a successor's lock alone", () => {
  const lock = lockDataDir(dir);
  const successor = JSON.stringify({ schemaVersion: 1, pid: deadPid() });
  writeFileSync(lockFile(), successor);
  lock.release();
  expect(readFileSync(lockFile(), 'utf8')).toBe(successor);
});
