import { execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, realpathSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HOLDING_FOLDER } from '../../core/tools/fs/holding-folder';
import { createFileCapability } from '../../host/tools/file-host';
import { createFsTools, type FsTools } from '../../host/tools/fs-tools';
import { observe } from '../../host/tools/observe';
import { Roots } from '../../host/fs/roots';

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
  const roots = await Roots.create([root]);
  const look = { follow: false };
  writeFileSync(join(root, 'f.bin'), 'abc');
  const seen = await observe(roots, 'f.bin', look);
  expect(seen).toMatchObject({ exists: true, type: 'file', size: 3, sha256: 'ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad' });
  expect(await observe(roots, 'f.bin', { ...look, hashLimitBytes: 1 })).toMatchObject({ sha256: null });
  expect(await observe(roots, root, look)).toMatchObject({ type: 'directory', entries: 1 });
  expect(await observe(roots, 'nope', look)).toEqual({ path: join(root, 'nope'), exists: false });
  expect(await observe(roots, 'nope/deeper', look)).toEqual({ path: join(root, 'nope', 'deeper'), exists: false });
  expect(await observe(roots, 'f.bin/deeper', look)).toEqual({ path: join(root, 'f.bin', 'deeper'), exists: false });
});

test('roots must exist, be absolute and be folders', async () => {
  await expect(Roots.create([join(dir, 'missing')])).rejects.toThrow(/AIRLOCK_ROOTS: .* does not exist/);
  await expect(Roots.create(['relative'])).rejects.toThrow(/not an absolute path/);
  await expect(Roots.create([join(outside, 'passwd')])).rejects.toThrow(/not a directory/);
});

function openFds(): number {
  return readdirSync('/proc/self/fd').length;
}

test('a final symbolic link is refused for every change; inside the roots it is followed for reading and listing', async () => {
  mkdirSync(join(root, 'real-dir'));
  writeFileSync(join(root, 'real-dir', 'x.txt'), 'x');
  writeFileSync(join(root, 'target.txt'), 'target');
  symlinkSync(join(root, 'target.txt'), join(root, 'alias.txt'));
  symlinkSync('real-dir', join(root, 'dir-alias'));
  expect((await tools.fs_write({ path: 'alias.txt', content: 'x', mode: 'overwrite' })).output).toMatch(/^Refused: alias.txt is a symbolic link; refusing to write it/);
  expect((await tools.fs_chmod({ path: 'alias.txt', mode: '600' })).output).toMatch(/^Refused: alias.txt is a symbolic link/);
  expect((await tools.fs_move({ from: 'alias.txt', to: 'moved.txt', overwrite: false })).output).toMatch(/^Refused: alias.txt is a symbolic link/);
  writeFileSync(join(root, 'other.txt'), 'other');
  expect((await tools.fs_move({ from: 'other.txt', to: 'alias.txt', overwrite: true })).output).toMatch(/^Refused: alias.txt is a symbolic link; refusing to replace it/);
  expect((await tools.fs_delete({ path: 'dir-alias', recursive: true })).output).toMatch(/^Refused: dir-alias is a symbolic link/);
  expect(readFileSync(join(root, 'target.txt'), 'utf8')).toBe('target');
  expect(statSync(join(root, 'target.txt')).mode & 0o777).not.toBe(0o600);
  // Following a link re-pins its target from the root: the real path is what is reported.
  expect((await tools.fs_list({ path: 'dir-alias' })).output).toBe(`${join(root, 'real-dir')}: 1 entries\nx.txt (1 bytes)`);
  expect(await tools.fs_write({ path: 'dir-alias/y.txt', content: 'y', mode: 'create' })).toEqual({ ok: true, output: `wrote 1 bytes to ${join(root, 'real-dir', 'y.txt')} (create)` });
  expect(JSON.parse((await tools.fs_stat({ path: 'alias.txt' })).output)).toMatchObject({ path: join(root, 'target.txt'), type: 'file', size: 6 });
});

test("a root's holding folder is no tool's: not listed or counted, and every path into it is refused, also through a link or a nested root", async () => {
  const held = join(root, HOLDING_FOLDER);
  mkdirSync(join(held, 'n1'), { recursive: true });
  writeFileSync(join(held, 'n1', 'item'), 'kept for undo');
  writeFileSync(join(root, 'visible.txt'), 'v');
  symlinkSync(held, join(root, 'to-held'));
  symlinkSync(join(held, 'n1', 'item'), join(root, 'to-item'));
  mkdirSync(join(root, 'nested', HOLDING_FOLDER, 'n2'), { recursive: true });
  writeFileSync(join(root, 'nested', HOLDING_FOLDER, 'n2', 'item'), 'nested root keeps its own');
  const both = createFsTools(await Roots.create([root, join(root, 'nested')]));
  const files = createFileCapability(await Roots.create([root, join(root, 'nested')]));

  const listing = (await both.fs_list({ path: '.' })).output;
  expect(listing).toMatch(/^.*: 4 entries\n/);
  expect(listing).not.toContain(HOLDING_FOLDER);
  expect(JSON.parse((await both.fs_stat({ path: '.' })).output)).toMatchObject({ type: 'directory', entries: 4 });
  expect((await both.fs_list({ path: 'nested' })).output).toMatch(/: 0 entries\n?$/);

  const refused = /^Refused: .* is inside \.airlock-undo, the folder where airlock keeps what undo can restore/;
  for (const path of [HOLDING_FOLDER, `${HOLDING_FOLDER}/n1/item`, join(held, 'n1'), 'to-held/n1/item', 'to-item', `nested/${HOLDING_FOLDER}/n2/item`, `sub/../${HOLDING_FOLDER}/n1`]) {
    const outcomes = [
      await both.fs_list({ path }),
      await both.fs_read({ path, maxBytes: 100 }),
      await both.fs_stat({ path }),
      await both.fs_write({ path: `${path}/new.txt`, content: 'x', mode: 'create' }),
      await both.fs_delete({ path, recursive: true }),
      await both.fs_chmod({ path, mode: '777' }),
      await both.fs_move({ from: path, to: 'taken-out', overwrite: false }),
      await both.fs_move({ from: 'visible.txt', to: `${path}/planted`, overwrite: false }),
    ];
    // A final link is refused as a link by the changing tools before it is followed: refused either way.
    for (const outcome of outcomes) expect({ path, outcome }).toEqual({ path, outcome: { ok: false, output: expect.stringMatching(path === 'to-item' ? /^Refused/ : refused) } });
    await expect(files.observe(path, { follow: true })).rejects.toThrow(/is inside \.airlock-undo/);
    // The diff reader does not follow a final link: the link itself is no file.
    if (path === 'to-item') await expect(files.contents(path, 100)).resolves.toEqual({ kind: 'not_a_file' });
    else await expect(files.contents(path, 100)).rejects.toThrow(/is inside \.airlock-undo/);
  }
  expect(readFileSync(join(held, 'n1', 'item'), 'utf8')).toBe('kept for undo');
  expect(readFileSync(join(root, 'nested', HOLDING_FOLDER, 'n2', 'item'), 'utf8')).toBe('nested root keeps its own');
  expect(readFileSync(join(root, 'visible.txt'), 'utf8')).toBe('v');
  expect(readdirSync(held)).toEqual(['n1']);
  expect(existsSync(join(root, 'taken-out'))).toBe(false);
  expect(statSync(join(held, 'n1')).mode & 0o777).not.toBe(0o777);

  // Only the name directly in a root is reserved: deeper down it is an ordinary folder.
  mkdirSync(join(root, 'project', HOLDING_FOLDER), { recursive: true });
  expect(await tools.fs_write({ path: `project/${HOLDING_FOLDER}/notes.txt`, content: 'mine', mode: 'create' })).toMatchObject({ ok: true });
  expect((await tools.fs_list({ path: 'project' })).output).toContain(`${HOLDING_FOLDER}/`);
});

test('a folder holding another root is neither moved nor deleted: the inner root and its held entries would go with it', async () => {
  mkdirSync(join(root, 'a', 'share', HOLDING_FOLDER, 'n1'), { recursive: true });
  writeFileSync(join(root, 'a', 'share', HOLDING_FOLDER, 'n1', 'held'), 'kept');
  const both = createFsTools(await Roots.create([root, join(root, 'a', 'share')]));
  const inner = realpathSync(join(root, 'a', 'share'));
  expect(await both.fs_move({ from: 'a', to: 'b', overwrite: false })).toEqual({ ok: false, output: `Refused: a holds the allowed root ${inner}; refusing to move it` });
  expect(await both.fs_delete({ path: 'a', recursive: true })).toEqual({ ok: false, output: `Refused: a holds the allowed root ${inner}; refusing to delete it` });
  expect(readFileSync(join(root, 'a', 'share', HOLDING_FOLDER, 'n1', 'held'), 'utf8')).toBe('kept');
  expect(existsSync(join(root, 'b'))).toBe(false);
  // A folder beside the inner root is an ordinary folder.
  mkdirSync(join(root, 'a', 'other'));
  expect(await both.fs_move({ from: 'a/other', to: 'other', overwrite: false })).toMatchObject({ ok: true });
});

test('special files are neither read nor written, and nothing blocks on them', async () => {
  execFileSync('mkfifo', [join(root, 'pipe')]);
  expect((await tools.fs_read({ path: 'pipe', maxBytes: 10 })).output).toMatch(/^Refused: pipe is not a regular file/);
  expect((await tools.fs_write({ path: 'pipe', content: 'x', mode: 'overwrite' })).output).toMatch(/^Refused: pipe exists and is not a regular file/);
  expect((await tools.fs_write({ path: 'pipe', content: 'x', mode: 'append' })).output).toMatch(/^Refused: pipe exists and is not a regular file/);
});

test('a recursive delete walks by descriptors: links inside are removed, never followed', async () => {
  mkdirSync(join(root, 'cache', 'sub', 'deeper'), { recursive: true });
  writeFileSync(join(root, 'cache', 'sub', 'deeper', 'f.txt'), 'f');
  symlinkSync(outside, join(root, 'cache', 'sub', 'out-dir'));
  symlinkSync(join(outside, 'passwd'), join(root, 'cache', 'out-file'));
  expect(await tools.fs_delete({ path: 'cache', recursive: true })).toEqual({ ok: true, output: `deleted ${join(root, 'cache')}` });
  expect(existsSync(join(root, 'cache'))).toBe(false);
  expect(readFileSync(join(outside, 'passwd'), 'utf8')).toBe('secret');
});

test('a recursive delete of a tree past the limits is refused before anything is deleted', async () => {
  const limited = createFsTools(await Roots.create([root]), { treeLimits: { entries: 5, depth: 3 } });
  mkdirSync(join(root, 'wide'));
  for (let i = 0; i < 6; i++) writeFileSync(join(root, 'wide', `f${i}`), 'x');
  expect((await limited.fs_delete({ path: 'wide', recursive: true })).output).toMatch(/^Refused: .*wide holds more than 5 entries below it/);
  expect(readdirSync(join(root, 'wide'))).toHaveLength(6);
  mkdirSync(join(root, 'deep', 'a', 'b', 'c'), { recursive: true });
  writeFileSync(join(root, 'deep', 'a', 'b', 'c', 'leaf'), 'x');
  expect((await limited.fs_delete({ path: 'deep', recursive: true })).output).toMatch(/^Refused: .*deep has folders nested more than 3 deep/);
  expect(existsSync(join(root, 'deep', 'a', 'b', 'c', 'leaf'))).toBe(true);
  rmSync(join(root, 'deep', 'a', 'b', 'c', 'leaf'));
  expect(await limited.fs_delete({ path: 'deep', recursive: true })).toMatchObject({ ok: true });
});

test('every tool closes every descriptor it opens, on success and on refusal', async () => {
  const roots = await Roots.create([root]);
  mkdirSync(join(root, 'd', 'e'), { recursive: true });
  writeFileSync(join(root, 'd', 'f.txt'), 'f');
  symlinkSync(outside, join(root, 'out'));
  const before = openFds();
  for (let i = 0; i < 3; i++) {
    await tools.fs_list({ path: 'd' });
    await tools.fs_list({ path: 'd/f.txt' });
    await tools.fs_read({ path: 'd/f.txt', maxBytes: 10 });
    await tools.fs_read({ path: 'd', maxBytes: 10 });
    await tools.fs_read({ path: 'out/passwd', maxBytes: 10 });
    await tools.fs_stat({ path: 'd' });
    await tools.fs_stat({ path: 'missing/deeper' });
    await tools.fs_write({ path: 'd/g.txt', content: 'g', mode: 'overwrite' });
    await tools.fs_write({ path: 'd/f.txt/x', content: 'g', mode: 'create' });
    await tools.fs_write({ path: 'd/f.txt', content: 'g', mode: 'create' });
    await tools.fs_chmod({ path: 'd/g.txt', mode: '600' });
    await tools.fs_chmod({ path: root, mode: '700' });
    await tools.fs_move({ from: 'd/g.txt', to: 'd/h.txt', overwrite: false });
    await tools.fs_move({ from: 'd/h.txt', to: 'd/f.txt', overwrite: false });
    await tools.fs_move({ from: 'd/h.txt', to: 'out/h.txt', overwrite: false });
    await tools.fs_delete({ path: 'd/h.txt', recursive: false });
    await tools.fs_delete({ path: 'd', recursive: false });
    await observe(roots, 'd', { follow: false, deep: true });
    await observe(roots, 'out/passwd', { follow: true }).catch(() => undefined);
  }
  await tools.fs_delete({ path: 'd', recursive: true });
  expect(openFds()).toBe(before);
  expect(readFileSync(join(outside, 'passwd'), 'utf8')).toBe('secret');
  expect(existsSync(join(outside, 'h.txt'))).toBe(false);
});
