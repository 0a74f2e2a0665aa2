import { mkdirSync, mkdtempSync, realpathSync, rmSync, statfsSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../core/config/config';
import { loadToolsSetup, machineSetup, ToolsConfigError, undoSettingsOf } from '../../host/config/tools-config-file';
import { Roots } from '../../host/fs/roots';
import { quotaBytes } from '../../host/tools/undo-settings';

/** The tools config's `undo`: which roots keep changes, how long, and what is refused with one line. */
let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-undo-config-'));
  for (const name of ['share', 'media']) mkdirSync(join(dir, name));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

async function settings(yaml: string) {
  const file = join(dir, 'tools.yaml');
  writeFileSync(file, yaml);
  const config = parseConfig({ AIRLOCK_DATA_DIR: join(dir, 'data'), AIRLOCK_TOOLS_CONFIG: file });
  const setup = await loadToolsSetup(config);
  const local = machineSetup(setup, config);
  return undoSettingsOf(setup, local, await Roots.create(local.roots, local.rootsFrom));
}

async function refusal(promise: Promise<unknown>): Promise<string> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(err instanceof ToolsConfigError)) throw new Error(`expected a ToolsConfigError, got ${String(err)}`);
  return err.message;
}

test('undo keeps changes in the roots it names (default: every root) for keepDays (default 7); without it, none', async () => {
  const share = join(dir, 'share');
  const media = join(dir, 'media');
  expect(await settings(`version: 1\nroots: [${share}, ${media}]\n`)).toBeUndefined();
  expect(await settings(`version: 1\nroots: [${share}, ${media}]\nundo: {}\n`)).toEqual({ roots: [realpathSync(share), realpathSync(media)], keepDays: 7 });
  expect(await settings(`version: 1\nroots: [${share}, ${media}]\nundo: { roots: [${media}/], keepDays: 30 }\n`)).toEqual({ roots: [realpathSync(media)], keepDays: 30 });
});

test('a folder under undo that is not a root, or a keepDays out of range, is refused naming the field', async () => {
  const share = join(dir, 'share');
  expect(await refusal(settings(`version: 1\nroots: [${share}]\nundo: { roots: [${dir}/media] }\n`))).toMatch(new RegExp(`undo\\.roots: ${dir}/media is not one of the roots \\(${share}\\); list only roots there`));
  expect(await refusal(settings(`version: 1\nroots: [${share}]\nundo: { keepDays: 0 }\n`))).toMatch(/undo\.keepDays: keepDays must be 1 to 365/);
  expect(await refusal(settings(`version: 1\nroots: [${share}]\nundo: { days: 3 }\n`))).toMatch(/undo/);
});

test('quota: a size or a share of the file system; default the smaller of 10 % and 20 GiB; anything else refused naming the field', async () => {
  const share = join(dir, 'share');
  expect(await settings(`version: 1\nroots: [${share}]\nundo: { quota: 20GiB }\n`)).toMatchObject({ quota: { bytes: 20 * 1024 ** 3 } });
  expect(await settings(`version: 1\nroots: [${share}]\nundo: { quota: 512 MiB }\n`)).toMatchObject({ quota: { bytes: 512 * 1024 ** 2 } });
  expect(await settings(`version: 1\nroots: [${share}]\nundo: { quota: '5%' }\n`)).toMatchObject({ quota: { percent: 5 } });
  expect(await refusal(settings(`version: 1\nroots: [${share}]\nundo: { quota: lots }\n`))).toMatch(/undo\.quota: quota must be a size such as "20GiB" or a share of the file system such as "10%"/);
  const fs = statfsSync(share);
  const total = fs.blocks * fs.bsize;
  expect(quotaBytes(share, undefined)).toBe(Math.min(total / 10, 20 * 1024 ** 3));
  expect(quotaBytes(share, { percent: 50 })).toBe(total / 2);
  expect(quotaBytes(share, { bytes: 7 })).toBe(7);
});
