import { createHash } from 'node:crypto';
import { lstatSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFsTools, type ToolOutcome } from '../../host/tools/fs-tools';
import { Roots } from '../../host/fs/roots';
import { findExchanger, type ExchangeLauncher } from '../helpers/exchange-loop';

const ITERATIONS = 1000;
const TREES = 50;
const CANARY = 'CANARY-outside-the-roots';

let dir: string;
let root: string;
let outside: string;

/** Everything under `path`, without following links: name, type, mode, inode and content. */
function snapshot(path: string): string[] {
  const out: string[] = [];
  const walk = (p: string, rel: string) => {
    for (const name of readdirSync(p).sort()) {
      const full = join(p, name);
      const info = lstatSync(full);
      const content = info.isFile() ? createHash('sha256').update(readFileSync(full)).digest('hex') : '';
      out.push(`${rel}${name} ${info.mode.toString(8)} ${info.ino} ${info.size} ${content}`);
      if (info.isDirectory()) walk(full, `${rel}${name}/`);
    }
  };
  walk(path, '');
  return out;
}

function openFds(): number {
  return readdirSync('/proc/self/fd').length;
}

/** The same names inside (the folder being swapped) and outside (the canary). */
function plant(folder: string, content: string, marker: string): void {
  mkdirSync(folder);
  writeFileSync(join(folder, 'inner.txt'), content, { mode: 0o640 });
  writeFileSync(join(folder, marker), content, { mode: 0o640 });
  for (let t = 0; t < TREES; t++) {
    mkdirSync(join(folder, `tree-${t}`));
    writeFileSync(join(folder, `tree-${t}`, 'leaf.txt'), content, { mode: 0o640 });
  }
}

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-race-'));
  root = join(dir, 'root');
  outside = join(dir, 'outside');
  mkdirSync(root);
  plant(join(root, 'swap'), 'inside', 'marker-inside.txt');
  plant(outside, CANARY, 'marker-outside.txt');
  symlinkSync(outside, join(root, 'link'));
});
const exchangeDir = mkdtempSync(join(tmpdir(), 'airlock-exchange-'));
afterAll(() => {
  rmSync(dir, { recursive: true, force: true });
  rmSync(exchangeDir, { recursive: true, force: true });
});

// The only test of the symlink-swap race: a machine that cannot run the attacker fails it, it never skips.
const exchanger = ((): ExchangeLauncher | string => {
  try {
    return findExchanger(exchangeDir);
  } catch (err) {
    // Where neither command exists at all the lookup itself can throw; that is the same answer.
    return `looking for python3 and gcc failed (${String(err)})`;
  }
})();

test(`a folder swapped with a link to outside (renameat2 RENAME_EXCHANGE) never lets a tool touch or reveal anything outside, ${ITERATIONS} rounds`, async () => {
  if (typeof exchanger === 'string') {
    throw new Error(
      `the symlink-swap race cannot run here: ${exchanger}. Install gcc (Debian: apt-get install gcc libc6-dev; .ci/run does) or python3 with ctypes`,
    );
  }
  const tools = createFsTools(await Roots.create([root]));
  const before = snapshot(outside);
  const loop = exchanger.start(join(root, 'swap'), join(root, 'link'));
  await loop.ready();
  const fdsBefore = openFds();
  const outputs: ToolOutcome[] = [];
  const started = Date.now();
  let trees = 0;
  let slowestRound = 0;
  let fdsAfter = -1;
  try {
    for (let i = 0; i < ITERATIONS; i++) {
      // Both names: at any moment one is the real folder and the other the link out.
      const base = i % 2 === 0 ? 'swap' : 'link';
      writeFileSync(join(root, `plain-${i}.txt`), 'plain');
      const roundStarted = Date.now();
      outputs.push(
        await tools.fs_read({ path: `${base}/inner.txt`, maxBytes: 1000 }),
        await tools.fs_read({ path: `${base}/marker-outside.txt`, maxBytes: 1000 }),
        await tools.fs_list({ path: base }),
        await tools.fs_stat({ path: `${base}/marker-outside.txt` }),
        await tools.fs_write({ path: `${base}/inner.txt`, content: `overwritten ${i}`, mode: 'overwrite' }),
        await tools.fs_write({ path: `${base}/inner.txt`, content: ` appended ${i}`, mode: 'append' }),
        await tools.fs_write({ path: `${base}/new-${i}.txt`, content: 'new', mode: 'create' }),
        await tools.fs_chmod({ path: `${base}/inner.txt`, mode: i % 4 < 2 ? '600' : '644' }),
        await tools.fs_chmod({ path: `${base}/marker-outside.txt`, mode: '666' }),
        await tools.fs_move({ from: `${base}/new-${i}.txt`, to: `${base}/moved-${i}.txt`, overwrite: false }),
        await tools.fs_move({ from: `plain-${i}.txt`, to: `${base}/arrived-${i}.txt`, overwrite: true }),
        await tools.fs_move({ from: `${base}/marker-outside.txt`, to: `taken-${i}.txt`, overwrite: false }),
        await tools.fs_delete({ path: `${base}/moved-${i}.txt`, recursive: false }),
        await tools.fs_delete({ path: `${base}/marker-outside.txt`, recursive: false }),
      );
      if (i % (ITERATIONS / TREES) === 0) {
        outputs.push(await tools.fs_delete({ path: `${base}/tree-${trees}`, recursive: true }));
        trees++;
      }
      slowestRound = Math.max(slowestRound, Date.now() - roundStarted);
    }
    fdsAfter = openFds();
  } finally {
    const swaps = await loop.stop();
    process.stderr.write(`fs-race: ${ITERATIONS} rounds, ${outputs.length} tool calls, ${swaps} exchanges (${exchanger.kind}) in ${Date.now() - started} ms, slowest round ${slowestRound} ms\n`);
    expect(swaps).toBeGreaterThan(ITERATIONS);
  }
  // No descriptor leaked by the tools (others of this test process, opened before, may have closed meanwhile).
  expect(fdsAfter).toBeLessThanOrEqual(fdsBefore);
  expect(snapshot(outside)).toEqual(before);
  const revealing = outputs.filter(
    (o) =>
      o.output.includes(CANARY) ||
      o.output.includes(outside) ||
      /marker-outside\.txt \(\d+ bytes\)/.test(o.output) ||
      /"exists":true/.test(o.output),
  );
  expect(revealing).toEqual([]);
  // The race was exercised: some calls met the link and were refused, others ran inside.
  expect(outputs.some((o) => o.ok)).toBe(true);
  expect(outputs.some((o) => !o.ok)).toBe(true);
  expect(readdirSync(root).filter((n) => n.startsWith('taken-'))).toEqual([]);
  // The attacker is a busy loop on a shared machine: where the test run keeps both cores busy the rounds can take
  // ten times as long as on a quiet one (the slowest round is printed above), so this test gets ten minutes.
}, 600_000);
