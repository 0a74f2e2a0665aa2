import { mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startRetention } from '../../host/retention';
import { pruneJournals } from '../../host/tools/move-journal';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

test('each task runs every round; one that fails is said in one line and does not stop the others; stop stops it', async () => {
  const lines: string[] = [];
  let counted = 0;
  const loop = startRetention(
    [
      { name: 'broken things', run: async () => Promise.reject(new Error('database gone\nstack line')) },
      { name: 'old rows', run: async () => ++counted },
    ],
    { firstAfterMs: 10, everyMs: 40, log: (line) => lines.push(line) },
  );
  for (let i = 0; i < 100 && counted < 3; i++) await sleep(20);
  loop.stop();
  const rounds = counted;
  expect(rounds).toBeGreaterThanOrEqual(3);
  expect(lines).toContain('airlock: retention: cannot remove old broken things: database gone; trying again later');
  expect(lines).toContain('airlock: retention: removed 1 old rows');
  expect(lines.filter((l) => l.startsWith('airlock: retention: cannot')).length).toBeGreaterThanOrEqual(rounds - 1);
  await sleep(150);
  expect(counted).toBe(rounds);
});

test('a round that removes nothing says nothing', async () => {
  const lines: string[] = [];
  const loop = startRetention([{ name: 'rows', run: async () => 0 }], { firstAfterMs: 60_000, log: (line) => lines.push(line) });
  await loop.runOnce();
  loop.stop();
  expect(lines).toEqual([]);
});

test('journals a crash left behind are removed once older than the retention; newer ones and other files stay', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-journals-'));
  try {
    const old = join(dir, 'aa.jsonl');
    writeFileSync(old, '{}\n');
    const past = new Date(Date.now() - 40 * 86_400_000);
    utimesSync(old, past, past);
    writeFileSync(join(dir, 'bb.jsonl'), '{}\n');
    writeFileSync(join(dir, 'notes.txt'), 'keep');
    expect(await pruneJournals(dir, 30 * 86_400_000)).toBe(1);
    expect(readdirSync(dir).sort()).toEqual(['bb.jsonl', 'notes.txt']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
