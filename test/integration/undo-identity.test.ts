import { generateKeyPairSync } from 'node:crypto';
import { chmodSync, existsSync, linkSync, mkdirSync, readFileSync, realpathSync, renameSync, statSync, symlinkSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ExecuteInput, ExecuteResult } from '../../activities/tool-gate';
import { approvedCalls } from '../helpers/approved-call';
import { runAttempt, undoFixture } from '../helpers/undo-root';

/**
 * Every kind of undo acts on the very file the change left — its device,
 * inode and birth time, with as many names (hard links) as it had — and on
 * nothing else at its path. An attacker who can write in the roots swaps
 * the path for a new file with the same bytes, for a hard link to a file
 * outside the roots, or gives the changed file a second name outside the
 * roots; each undo then refuses (on its card and when it runs), and the
 * file outside keeps its bytes. Real folders, real links, the real gate.
 */
const keys = generateKeyPairSync('ed25519');
const f = undoFixture('airlock-undo-identity-', keys.publicKey);

const changeCall = approvedCalls({ gate: () => f.gate, privateKey: keys.privateKey, jobId: 'job-1' });
const undoCall = approvedCalls({ gate: () => f.gate, privateKey: keys.privateKey, jobId: 'undo-job-1' });
const run = (input: ExecuteInput, attempt = 1): Promise<ExecuteResult> => runAttempt(f.gate, input, attempt);
const inRoot = (name: string) => join(f.root, name);

/** A folder beside the root, outside every root: what an attacker wants written. */
function outside(name: string, content: string): string {
  mkdirSync(join(f.dir, 'outside'), { recursive: true });
  const path = join(f.dir, 'outside', name);
  writeFileSync(path, content);
  return path;
}

/** Runs an approved change; its call id. */
async function changed(toolName: string, args: Record<string, unknown>): Promise<string> {
  const { prepared, input } = await changeCall(toolName, args);
  expect(prepared.undo).toMatchObject({ reversible: true });
  expect(await run(input)).toMatchObject({ ok: true });
  return input.callId;
}

/** The undo's card (its warnings) and, separately, its run. */
async function undoCard(args: Record<string, unknown>) {
  const { prepared, input } = await undoCall('fs_undo', { job: 'job-1', ...args });
  return { warnings: prepared.warnings.join('\n'), run: () => run(input) };
}

/** The path swapped for another entry, as `mv` does it: atomically, under the same name. */
function swapIn(path: string, make: (tmp: string) => void): void {
  const tmp = `${path}.swap`;
  make(tmp);
  renameSync(tmp, path);
}

describe('the undo of an overwrite', () => {
  test('the path replaced by a hard link to a file outside the roots holding what the write left: refused on the card and when run; the file outside keeps its bytes', async () => {
    writeFileSync(inRoot('linked.txt'), 'old secret');
    const call = await changed('fs_write', { path: 'linked.txt', content: 'what the write left', mode: 'overwrite' });
    const target = outside('passwd', 'what the write left');
    swapIn(inRoot('linked.txt'), (tmp) => linkSync(target, tmp));

    const card = await undoCard({ call, path: 'linked.txt' });
    expect(card.warnings).toContain(`is another file than the one call ${call} of job job-1 wrote (replaced since); nothing was put back`);
    expect(await card.run()).toMatchObject({ ok: false });
    expect(readFileSync(target, 'utf8')).toBe('what the write left');
  });

  test('the path replaced by a new file with the same bytes: refused; the new file keeps its bytes', async () => {
    writeFileSync(inRoot('a.txt'), 'before');
    const call = await changed('fs_write', { path: 'a.txt', content: 'after', mode: 'overwrite' });
    swapIn(inRoot('a.txt'), (tmp) => writeFileSync(tmp, 'after'));
    const card = await undoCard({ call, path: 'a.txt' });
    expect(card.warnings).toContain('(replaced since); nothing was put back');
    expect(await card.run()).toMatchObject({ ok: false });
    expect(readFileSync(inRoot('a.txt'), 'utf8')).toBe('after');
  });

  test('the very file given a second name outside the roots after the write: refused, naming the count; neither name changes', async () => {
    writeFileSync(inRoot('b.txt'), 'before');
    const call = await changed('fs_write', { path: 'b.txt', content: 'after', mode: 'overwrite' });
    mkdirSync(join(f.dir, 'outside'), { recursive: true });
    linkSync(inRoot('b.txt'), join(f.dir, 'outside', 'b-too.txt'));
    const card = await undoCard({ call, path: 'b.txt' });
    expect(card.warnings).toContain('has 2 names (hard links) now and had 1 when the change left it: a name was made since, possibly outside the allowed folders; nothing was put back');
    expect(await card.run()).toMatchObject({ ok: false });
    expect(readFileSync(join(f.dir, 'outside', 'b-too.txt'), 'utf8')).toBe('after');
  });

  test('swapped in the instant between the undo card and its run: the run refuses', async () => {
    writeFileSync(inRoot('c.txt'), 'before');
    const call = await changed('fs_write', { path: 'c.txt', content: 'after', mode: 'overwrite' });
    const card = await undoCard({ call, path: 'c.txt' });
    expect(card.warnings).toBe('');
    const target = outside('c.conf', 'after');
    swapIn(inRoot('c.txt'), (tmp) => linkSync(target, tmp));
    expect(await card.run()).toMatchObject({ ok: false });
    expect(readFileSync(target, 'utf8')).toBe('after');
  });

  test('the path replaced by a symbolic link to a file outside the roots: refused; nothing is written through it', async () => {
    writeFileSync(inRoot('d.txt'), 'before');
    const call = await changed('fs_write', { path: 'd.txt', content: 'after', mode: 'overwrite' });
    const target = outside('d.conf', 'after');
    swapIn(inRoot('d.txt'), (tmp) => symlinkSync(target, tmp));
    const card = await undoCard({ call, path: 'd.txt' });
    expect(card.warnings).toContain('is a symbolic link now');
    expect(await card.run()).toMatchObject({ ok: false });
    expect(readFileSync(target, 'utf8')).toBe('after');
  });
});

describe('the undo of an append', () => {
  test('the very file given a second name outside the roots: refused; nothing is cut', async () => {
    writeFileSync(inRoot('log.txt'), 'one\n');
    const call = await changed('fs_write', { path: 'log.txt', content: 'two\n', mode: 'append' });
    mkdirSync(join(f.dir, 'outside'), { recursive: true });
    linkSync(inRoot('log.txt'), join(f.dir, 'outside', 'log.txt'));
    const card = await undoCard({ call, path: 'log.txt' });
    expect(card.warnings).toContain('has 2 names (hard links) now and had 1 when the change left it');
    expect(await card.run()).toMatchObject({ ok: false });
    expect(readFileSync(join(f.dir, 'outside', 'log.txt'), 'utf8')).toBe('one\ntwo\n');
  });

  test('the path replaced by a hard link to a file outside the roots with the same bytes: refused; the file outside is not cut', async () => {
    writeFileSync(inRoot('log2.txt'), 'one\n');
    const call = await changed('fs_write', { path: 'log2.txt', content: 'two\n', mode: 'append' });
    const target = outside('log2.txt', 'one\ntwo\n');
    swapIn(inRoot('log2.txt'), (tmp) => linkSync(target, tmp));
    const card = await undoCard({ call, path: 'log2.txt' });
    expect(card.warnings).toContain(`is another file than the one call ${call} of job job-1 appended to (replaced since); nothing was cut`);
    expect(await card.run()).toMatchObject({ ok: false });
    expect(readFileSync(target, 'utf8')).toBe('one\ntwo\n');
  });
});

describe('the undo of a mode change', () => {
  test('the path replaced by a hard link to a file outside the roots with the mode set: refused; its mode stays', async () => {
    writeFileSync(inRoot('run.sh'), 'echo');
    chmodSync(inRoot('run.sh'), 0o700);
    const call = await changed('fs_chmod', { path: 'run.sh', mode: '755' });
    const target = outside('sudoers', 'echo');
    chmodSync(target, 0o755);
    swapIn(inRoot('run.sh'), (tmp) => linkSync(target, tmp));
    const card = await undoCard({ call, path: 'run.sh' });
    expect(card.warnings).toContain('is another file than the one');
    expect(await card.run()).toMatchObject({ ok: false });
    expect(statSync(target).mode & 0o777).toBe(0o755);
  });

  test('the very file given a second name outside the roots: refused; its mode stays', async () => {
    writeFileSync(inRoot('tool.sh'), 'echo');
    chmodSync(inRoot('tool.sh'), 0o700);
    const call = await changed('fs_chmod', { path: 'tool.sh', mode: '750' });
    mkdirSync(join(f.dir, 'outside'), { recursive: true });
    linkSync(inRoot('tool.sh'), join(f.dir, 'outside', 'tool.sh'));
    const card = await undoCard({ call, path: 'tool.sh' });
    expect(card.warnings).toContain('has 2 names (hard links) now and had 1 when the change left it');
    expect(await card.run()).toMatchObject({ ok: false });
    expect(statSync(join(f.dir, 'outside', 'tool.sh')).mode & 0o777).toBe(0o750);
  });
});

describe('the undo of a delete', () => {
  const heldIn = (nonce: string) => join(f.root, '.airlock-undo', nonce, 'held');

  test('the kept file swapped for another with the same bytes, or given a second name outside the roots: refused; nothing goes back at the path', async () => {
    writeFileSync(inRoot('gone.txt'), 'kept bytes');
    const { prepared, input } = await changeCall('fs_delete', { path: 'gone.txt', recursive: false });
    expect(await run(input)).toMatchObject({ ok: true });
    const kept = heldIn(prepared.nonce);
    mkdirSync(join(f.dir, 'outside'), { recursive: true });
    linkSync(kept, join(f.dir, 'outside', 'gone.txt'));
    const linked = await undoCard({ call: input.callId, path: 'gone.txt' });
    expect(linked.warnings).toContain('it has 2 names (hard links) now, 1 when it was kept');
    expect(await linked.run()).toMatchObject({ ok: false });

    unlinkSync(join(f.dir, 'outside', 'gone.txt'));
    swapIn(kept, (tmp) => writeFileSync(tmp, 'kept bytes'));
    const swapped = await undoCard({ call: input.callId, path: 'gone.txt' });
    expect(swapped.warnings).toMatch(/it is another (file|entry) than the one that was kept/);
    expect(await swapped.run()).toMatchObject({ ok: false });
    expect(() => statSync(inRoot('gone.txt'))).toThrow();
  });
});

describe('the undo of a move', () => {
  test('the moved file replaced at its destination by a hard link to a file outside the roots, or given a second name: refused; nothing moves back', async () => {
    writeFileSync(inRoot('from.txt'), 'moved bytes');
    const call = await changed('fs_move', { from: 'from.txt', to: 'to.txt', overwrite: false });
    mkdirSync(join(f.dir, 'outside'), { recursive: true });
    linkSync(inRoot('to.txt'), join(f.dir, 'outside', 'to.txt'));
    const named = await undoCard({ call, path: 'from.txt', to: 'to.txt' });
    expect(named.warnings).toContain('it has 2 names (hard links) now, 1 when it was kept');
    expect(await named.run()).toMatchObject({ ok: false });

    unlinkSync(join(f.dir, 'outside', 'to.txt'));
    const target = outside('elsewhere.txt', 'moved bytes');
    swapIn(inRoot('to.txt'), (tmp) => linkSync(target, tmp));
    const swapped = await undoCard({ call, path: 'from.txt', to: 'to.txt' });
    expect(swapped.warnings).toContain(`is not the entry call ${call} of job job-1 moved there (moved on or replaced since)`);
    expect(await swapped.run()).toMatchObject({ ok: false });
    expect(() => statSync(inRoot('from.txt'))).toThrow();
    expect(statSync(target).nlink).toBe(2);
  });
});

describe('the undo of a bulk move', () => {
  test('one moved file given a second name outside the roots, or replaced by a hard link to one: the whole undo refuses, moving nothing back', async () => {
    mkdirSync(inRoot('in'));
    mkdirSync(inRoot('out'));
    for (const n of ['a', 'b', 'c']) writeFileSync(inRoot(`in/${n}.txt`), `file ${n}`);
    const moves = ['a', 'b', 'c'].map((n) => ({ from: `in/${n}.txt`, to: `out/${n}.txt` }));
    const call = await changed('fs_move_many', { moves });
    mkdirSync(join(f.dir, 'outside'), { recursive: true });
    linkSync(inRoot('out/b.txt'), join(f.dir, 'outside', 'b.txt'));
    const named = await undoCard({ call, moves });
    expect(named.warnings).toContain('it has 2 names (hard links) now, 1 when it was kept');
    expect(await named.run()).toMatchObject({ ok: false });

    unlinkSync(join(f.dir, 'outside', 'b.txt'));
    const target = outside('c.txt', 'file c');
    swapIn(inRoot('out/c.txt'), (tmp) => linkSync(target, tmp));
    const swapped = await undoCard({ call, moves });
    expect(swapped.warnings).toContain('is not the entry the move put there (moved on or replaced since)');
    expect(await swapped.run()).toMatchObject({ ok: false });
    for (const n of ['a', 'b', 'c']) expect(readFileSync(inRoot(`out/${n}.txt`), 'utf8')).toBe(`file ${n}`);
    expect(statSync(target).nlink).toBe(2);
  });
});

describe('an inode number given again', () => {
  /** Removes `path` and makes new files until one at `path` gets its inode number again (the file system gives a freed number to the next file), with its bytes, mode and times. */
  function reborn(path: string, bytes: string): void {
    const old = statSync(path);
    unlinkSync(path);
    const taken: string[] = [];
    for (let i = 0; i < 500; i++) {
      writeFileSync(path, bytes);
      if (statSync(path).ino === old.ino) {
        for (const t of taken) unlinkSync(t);
        chmodSync(path, old.mode & 0o7777);
        utimesSync(path, old.atime, old.mtime);
        expect(statSync(path).birthtimeMs).not.toBe(old.birthtimeMs);
        return;
      }
      // Keep this number taken, and try again for the freed one.
      taken.push(`${path}.taken${i}`);
      renameSync(path, `${path}.taken${i}`);
    }
    throw new Error(`the file system did not give inode ${old.ino} again within 500 files: this test needs one that does (ext4, overlayfs, tmpfs)`);
  }

  test.each([
    ['a move', () => ({ tool: 'fs_move', args: { from: 'a.txt', to: 'b.txt', overwrite: false }, undo: { path: 'a.txt', to: 'b.txt' }, from: 'a.txt', at: 'b.txt' })],
    ['a bulk move', () => {
      mkdirSync(inRoot('src'));
      mkdirSync(inRoot('dst'));
      const moves = [{ from: 'src/a.txt', to: 'dst/a.txt' }];
      return { tool: 'fs_move_many', args: { moves }, undo: { moves }, from: 'src/a.txt', at: 'dst/a.txt' };
    }],
  ])("%s: the moved file removed and a new one with its bytes, mode and times made under its inode number: refused by its birth time; nothing moves back", async (_name, shape) => {
    const { tool, args, undo, from, at } = shape();
    writeFileSync(inRoot(from), 'moved bytes');
    const call = await changed(tool, args);
    reborn(inRoot(at), 'moved bytes');
    const card = await undoCard({ call, ...undo });
    expect(card.warnings).toMatch(/is not the entry (call \S+ of job job-1 moved there|the move put there)/);
    expect(await card.run()).toMatchObject({ ok: false });
    expect(existsSync(inRoot(from))).toBe(false);
  });
});

test('a file that had two names when it was written is put back under both (the count is what the write left); its undo card says it has two names', async () => {
  writeFileSync(inRoot('shared.txt'), 'shared');
  linkSync(inRoot('shared.txt'), inRoot('shared-too.txt'));
  const call = await changed('fs_write', { path: 'shared.txt', content: 'changed', mode: 'overwrite' });
  const { prepared, input } = await undoCall('fs_undo', { job: 'job-1', call, path: 'shared.txt' });
  expect(prepared.observed[0]).toMatchObject({ path: `${realpathSync(f.root)}/shared.txt`, links: 2 });
  expect(await run(input)).toMatchObject({ ok: true });
  expect(readFileSync(inRoot('shared-too.txt'), 'utf8')).toBe('shared');
});
