import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AuditEvent } from '../../core/audit/events';
import { JsonlAuditSink } from '../../host/stores/audit-log/jsonl';
import { smallFolder, type SmallFolder } from '../helpers/small-fs';

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-audit-log-'));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const event = (n: number, error = `event ${n}`): AuditEvent => ({
  type: 'runtime_error',
  jobId: 'job-1',
  at: new Date(n * 1000).toISOString(),
  policyVersion: 'v',
  data: { code: 'model_error', error },
});

/** Every line of the file, each a whole event. */
function lines(file: string): AuditEvent[] {
  const text = readFileSync(file, 'utf8');
  expect(text === '' || text.endsWith('\n')).toBe(true);
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as AuditEvent);
}

test('a torn tail is moved to <file>.torn on open, said once, and the next event starts on its own line', async () => {
  const file = join(dir, 'audit.jsonl');
  writeFileSync(file, `${JSON.stringify(event(1))}\n{"type":"tool_exec`);
  const warnings: string[] = [];
  const sink = new JsonlAuditSink(file, { warn: (l) => warnings.push(l) });
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toContain(`${file} ended in a partial line (18 bytes`);
  expect(warnings[0]).toContain(`moved to ${file}.torn`);
  expect(readFileSync(`${file}.torn`, 'utf8')).toBe('{"type":"tool_exec\n');
  await sink.write([event(2)]);
  expect(lines(file).map((e) => e.at)).toEqual([event(1).at, event(2).at]);
  expect(warnings).toHaveLength(1);
});

test('a torn tail left while the worker runs (another writer) is repaired before the next write', async () => {
  const file = join(dir, 'audit.jsonl');
  const warnings: string[] = [];
  const sink = new JsonlAuditSink(file, { warn: (l) => warnings.push(l) });
  await sink.write([event(1)]);
  writeFileSync(file, '{"partial', { flag: 'a' });
  await sink.write([event(2), event(3)]);
  expect(lines(file).map((e) => e.at)).toEqual([event(1).at, event(2).at, event(3).at]);
  expect(warnings).toHaveLength(1);
});

test('a failed write throws naming the file, warns once a minute with a count, and says when writing works again', async () => {
  const file = join(dir, 'audit.jsonl');
  const warnings: string[] = [];
  let now = 0;
  const sink = new JsonlAuditSink(file, { warn: (l) => warnings.push(l), now: () => now });
  // A folder where the file should be: every open fails, as root too.
  rmSync(file);
  mkdirSync(file);
  await expect(sink.write([event(1)])).rejects.toThrow(`cannot write ${file}: EISDIR`);
  for (let i = 0; i < 5; i++) await expect(sink.write([event(2)])).rejects.toThrow();
  expect(warnings).toHaveLength(1);
  expect(warnings[0]).toMatch(new RegExp(`^airlock: cannot write the audit log ${file}: EISDIR`));
  now = 61_000;
  await expect(sink.write([event(3)])).rejects.toThrow();
  expect(warnings).toHaveLength(2);
  expect(warnings[1]).toContain('(5 more failed write(s) since the last warning)');
  rmSync(file, { recursive: true });
  await sink.write([event(4)]);
  expect(warnings[2]).toBe(`airlock: audit log ${file} is writable again after 7 failed write(s)`);
  expect(lines(file)).toHaveLength(1);
});

describe('on a folder that refuses writes', () => {
  let small: SmallFolder;
  beforeEach(() => {
    small = smallFolder();
  });
  afterEach(() => small.close());

  test('a batch is written whole or not at all, never as a partial line', async () => {
    const file = join(small.dir, 'audit.jsonl');
    // A first line that leaves a few bytes of its page free: a full tmpfs then takes the start of the next batch only.
    const seed = event(0, 'x'.repeat(4096 - 40 - JSON.stringify(event(0, '')).length - 1));
    writeFileSync(file, `${JSON.stringify(seed)}\n`, { mode: 0o600 });
    const before = readFileSync(file);
    const warnings: string[] = [];
    const sink = new JsonlAuditSink(file, { warn: (l) => warnings.push(l) });
    small.block();
    const batch = [event(1), event(2), event(3)];
    await expect(sink.write(batch)).rejects.toThrow(small.kind === 'tmpfs' ? /ENOSPC/ : /EACCES/);
    expect(readFileSync(file)).toEqual(before);
    small.unblock();
    await sink.write(batch);
    expect(lines(file).map((e) => e.at)).toEqual([seed.at, ...batch.map((e) => e.at)]);
    expect(existsSync(`${file}.torn`)).toBe(false);
  });
});
