import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createFsTools, type FsTools } from '../../host/tools/fs-tools';
import { observe } from '../../host/tools/observe';
import { Roots } from '../../host/roots';

let dir: string;
let root: string;
let outside: string;
let tools: FsTools;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-fs-'));
  root = join(dir, 'root');
  outside = join(dir, 'outside');
  mkdirSync(root);
  mkdirSync(outside);
  writeFileSync(join(outside, 'passwd'), 'secret');
  tools = createFsTools(await Roots.create([root]));
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

test('relative paths are taken from the first root; Japanese names work', async () => {
  expect(await tools.fs_write({ path: '写真.txt', content: 'ねこ', mode: 'create' })).toMatchObject({ ok: true });
  expect(readFileSync(join(root, '写真.txt'), 'utf8')).toBe('ねこ');
  expect(await tools.fs_read({ path: '写真.txt', maxBytes: 100 })).toEqual({ ok: true, output: 'ねこ' });
  expect((await tools.fs_list({ path: '.' })).output).toContain('写真.txt (6 bytes)');
});

test.each([['../outside/passwd'], ['/etc/passwd'], ['sub/../../outside/passwd']])('%s is refused as outside the roots', async (path) => {
  const result = await tools.fs_read({ path, maxBytes: 100 });
  expect(result.ok).toBe(false);
  expect(result.output).toMatch(/^Refused: .* outside the allowed roots/);
});

test('symbolic links cannot lead outside the roots', async () => {
  symlinkSync(join(outside, 'passwd'), join(root, 'link-to-passwd'));
  symlinkSync(outside, join(root, 'link-to-dir'));
  expect((await tools.fs_read({ path: 'link-to-passwd', maxBytes: 100 })).output).toMatch(/^Refused: .*outside the allowed roots through a symbolic link/);
  expect((await tools.fs_delete({ path: 'link-to-passwd', recursive: false })).output).toMatch(/^Refused: .*is a symbolic link/);
  expect((await tools.fs_write({ path: 'link-to-dir/new.txt', content: 'x', mode: 'create' })).output).toMatch(/^Refused: .*through a symbolic link/);
  expect((await tools.fs_delete({ path: 'link-to-dir/passwd', recursive: false })).output).toMatch(/^Refused/);
  expect(readFileSync(join(outside, 'passwd'), 'utf8')).toBe('secret');
  expect(existsSync(join(outside, 'new.txt'))).toBe(false);
});

test('a link that stays inside the roots is followed for reading', async () => {
  writeFileSync(join(root, 'real.txt'), 'inside');
  symlinkSync(join(root, 'real.txt'), join(root, 'alias.txt'));
  expect(await tools.fs_read({ path: 'alias.txt', maxBytes: 100 })).toEqual({ ok: true, output: 'inside' });
});

test('each tool keeps its own checks', async () => {
  mkdirSync(join(root, 'full'));
  writeFileSync(join(root, 'full', 'x'), 'x');
  expect((await tools.fs_delete({ path: 'full', recursive: false })).output).toMatch(/directory not empty: .*set recursive/);
  expect((await tools.fs_delete({ path: root, recursive: true })).output).toMatch(/^Refused: refusing to delete an allowed root itself/);
  expect(await tools.fs_delete({ path: 'full', recursive: true })).toMatchObject({ ok: true });
  writeFileSync(join(root, 'a.txt'), 'a');
  writeFileSync(join(root, 'b.txt'), 'b');
  expect((await tools.fs_move({ from: 'a.txt', to: 'b.txt', overwrite: false })).output).toMatch(/already exists \(set overwrite/);
  expect(await tools.fs_move({ from: 'a.txt', to: 'c.txt', overwrite: false })).toMatchObject({ ok: true });
  expect((await tools.fs_write({ path: 'c.txt', content: 'x', mode: 'create' })).output).toMatch(/^Error: already exists/);
  expect(await tools.fs_chmod({ path: 'c.txt', mode: '600' })).toMatchObject({ ok: true });
  expect((statSync(join(root, 'c.txt')).mode & 0o777).toString(8)).toBe('600');
  expect((await tools.fs_read({ path: 'missing.txt', maxBytes: 10 })).output).toMatch(/^Error: no such file or directory/);
});

test('observe records what a reviewer needs to see and a precondition needs to compare', async () => {
  writeFileSync(join(root, 'f.bin'), 'abc');
  const seen = await observe(join(root, 'f.bin'));
  expect(seen).toMatchObject({ exists: true, type: 'file', size: 3, sha256: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad' });
  expect(await observe(join(root, 'f.bin'), 1)).toMatchObject({ sha256: null });
  expect(await observe(root)).toMatchObject({ type: 'directory', entries: 1 });
  expect(await observe(join(root, 'nope'))).toEqual({ path: join(root, 'nope'), exists: false });
});

test('roots must exist, be absolute and be folders', async () => {
  await expect(Roots.create([join(dir, 'missing')])).rejects.toThrow(/AIRLOCK_ROOTS: .* does not exist/);
  await expect(Roots.create(['relative'])).rejects.toThrow(/not an absolute path/);
  await expect(Roots.create([join(outside, 'passwd')])).rejects.toThrow(/not a directory/);
});
