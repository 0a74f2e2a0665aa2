import { createHash, generateKeyPairSync } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { appendFileSync, chmodSync, chownSync, closeSync, existsSync, linkSync, mkdirSync, openSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, utimesSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import type { ExecuteInput, ExecuteResult } from '../../activities/tool-gate';
import { actionSentence } from '../../core/reviewer/action-sentence';
import { Roots } from '../../host/fs/roots';
import { createFileCapability } from '../../host/tools/file-host';
import { purgeExpiredHolds } from '../../host/tools/holding';
import { approvedCalls } from '../helpers/approved-call';
import { asNobody, gateOver, runAttempt, undoFixture } from '../helpers/undo-root';

/**
 * Reversible writes through the real gate activities on real folders: an
 * overwrite (a truncate is an overwrite with nothing) keeps the old file
 * and puts it back whole, inode and all; an append is cut back to its
 * length. Each undo refuses once the file holds anything but what the
 * write left, and a kill between any two steps leaves the old content or
 * the new, finished once by the next attempt.
 */
const keys = generateKeyPairSync('ed25519');
const f = undoFixture('airlock-undo-write-', keys.publicKey);
const DAY = 24 * 3600 * 1000;
const sha = (text: string | Buffer) => createHash('sha256').update(text).digest('hex');

const gateWith = (options: { readonly now?: () => number } = {}) => gateOver(f, keys.publicKey, options);

const writeCall = approvedCalls({ gate: () => f.gate, privateKey: keys.privateKey, jobId: 'job-1' });
const undoCall = approvedCalls({ gate: () => f.gate, privateKey: keys.privateKey, jobId: 'undo-job-1' });
const run = (input: ExecuteInput, attempt = 1): Promise<ExecuteResult> => runAttempt(f.gate, input, attempt);
const callFolder = (nonce: string) => join(f.root, '.airlock-undo', nonce);

/** What a user relies on of a file: its bytes, inode, mode, owner and modification time (to the millisecond: an undo sets it back to the microsecond). */
function fileFacts(path: string) {
  const s = statSync(path);
  return { bytes: sha(readFileSync(path)), ino: s.ino, dev: s.dev, mode: s.mode, uid: s.uid, gid: s.gid, mtime: Math.round(s.mtimeMs), nlink: s.nlink };
}

/** Writes `path` as an approved call; its call id, nonce and what the card said. */
async function written(path: string, content: string, mode: 'overwrite' | 'append') {
  const { prepared, input } = await writeCall('fs_write', { path, content, mode });
  const sentence = actionSentence({ toolName: 'fs_write', args: input.args, observed: prepared.observed, target: '', ...(prepared.undo !== undefined ? { undo: prepared.undo } : {}) });
  expect(await run(input)).toMatchObject({ ok: true });
  return { callId: input.callId, nonce: prepared.nonce, sentence, undo: prepared.undo };
}

/** What an attempt that consumed the grant and was killed leaves in the store. */
async function consumedBy(call: Awaited<ReturnType<typeof writeCall>>): Promise<void> {
  const { prepared, input } = call;
  await f.nonces.consume({ nonce: prepared.nonce, jobId: input.jobId, callId: input.callId, fingerprint: input.grant.claims.fingerprint, before: prepared.observed });
}

/** The marker and the copy of the content before, as an overwrite killed after keeping them leaves its call's folder. */
function keptOld(nonce: string, file: string, content: string): void {
  mkdirSync(callFolder(nonce), { recursive: true, mode: 0o700 });
  chmodSync(join(f.root, '.airlock-undo'), 0o700);
  writeFileSync(join(callFolder(nonce), 'write.json'), JSON.stringify({ kind: 'replaced', after: sha(content), bytes: Buffer.byteLength(content) }));
  writeFileSync(join(callFolder(nonce), 'before'), readFileSync(file));
}

async function undone(callId: string, path: string) {
  const { prepared, input } = await undoCall('fs_undo', { job: 'job-1', call: callId, path });
  return { warnings: prepared.warnings.join('\n'), result: await run(input) };
}

test('an overwrite is undone byte for byte, in place: the file keeps its inode, mode, owner, attributes and mtime; its content before comes back', async () => {
  const file = join(f.root, 'budget.csv');
  writeFileSync(file, 'month,amount\njan,100\nfeb,120\n');
  chmodSync(file, 0o640);
  chownSync(file, 1000, 1000);
  execFileSync('setfattr', ['-n', 'user.origin', '-v', 'bank-export', file]);
  utimesSync(file, new Date('2022-05-06'), new Date('2022-05-06'));
  const before = fileFacts(file);

  const w = await written('budget.csv', 'month,amount\n', 'overwrite');
  expect(w.sentence).toBe('Replace budget.csv (29 bytes) in / with 13 bytes — reversible for 7 days (airlock undo)');
  // Written in place, as without undo: the same inode, owner, mode and attributes.
  const after = fileFacts(file);
  expect(readFileSync(file, 'utf8')).toBe('month,amount\n');
  expect({ ...after, bytes: '', mtime: 0 }).toEqual({ ...before, bytes: '', mtime: 0 });
  expect(await f.nonces.undoRecord(w.nonce)).toMatchObject({ state: 'held', toolName: 'fs_write', held: { type: 'file', bytes: 29, digest: before.bytes, mode: '640' }, change: { kind: 'replaced', after: sha('month,amount\n') }, asideBytes: 29 });
  expect(await f.nonces.heldBytes(realpathSync(f.root))).toBe(29);

  const u = await undone(w.callId, 'budget.csv');
  expect(u.warnings).toBe('');
  expect(u.result).toMatchObject({ ok: true, output: `put ${realpathSync(f.root)}/budget.csv back as it was before the write` });
  expect(fileFacts(file)).toEqual(before);
  expect(execFileSync('getfattr', ['--absolute-names', '--only-values', '-n', 'user.origin', file], { encoding: 'utf8' })).toBe('bank-export');
  expect(await f.nonces.undoRecord(w.nonce)).toMatchObject({ state: 'restored' });
  expect(readdirSync(join(f.root, '.airlock-undo'))).toEqual([]);
  expect(await f.nonces.heldBytes(realpathSync(f.root))).toBe(0);
});

test('a log truncated (an overwrite with nothing) while a program keeps it open: the program writes on into the same file, and the undo puts the content before back in that file', async () => {
  const file = join(f.root, 'app.log');
  writeFileSync(file, Buffer.alloc(300_000, 'log line\n'));
  const before = readFileSync(file);
  const writer = openSync(file, 'a');
  try {
    const w = await written('app.log', '', 'overwrite');
    expect(statSync(file).size).toBe(0);
    writeSync(writer, 'after the truncate\n');
    expect(readFileSync(file, 'utf8')).toBe('after the truncate\n');
    // What the program wrote since is a change after the write: the undo says so and keeps it.
    expect((await undone(w.callId, 'app.log')).warnings).toContain('changed after the write');
    writeFileSync(file, '');
    expect((await undone(w.callId, 'app.log')).result).toMatchObject({ ok: true });
    expect(readFileSync(file).equals(before)).toBe(true);
    writeSync(writer, 'appended after the undo\n');
    expect(readFileSync(file).equals(Buffer.concat([before, Buffer.from('appended after the undo\n')]))).toBe(true);
  } finally {
    closeSync(writer);
  }
});

test('an append is undone: cut back to its length, the same inode, nothing set aside', async () => {
  const file = join(f.root, 'notes.md');
  writeFileSync(file, '# Notes\n');
  chmodSync(file, 0o600);
  const before = fileFacts(file);
  const w = await written('notes.md', '- buy milk\n', 'append');
  expect(w.sentence).toBe('Append 11 bytes to notes.md (8 bytes now) in / — reversible for 7 days (airlock undo)');
  expect(readFileSync(file, 'utf8')).toBe('# Notes\n- buy milk\n');
  expect(await f.nonces.undoRecord(w.nonce)).toMatchObject({ state: 'held', change: { kind: 'appended', size: 8, after: sha('# Notes\n- buy milk\n') } });
  expect(await f.nonces.heldBytes(realpathSync(f.root))).toBe(0);

  const u = await undone(w.callId, 'notes.md');
  expect(u.result).toMatchObject({ ok: true, output: `took the appended bytes off ${realpathSync(f.root)}/notes.md (back to 8 bytes)` });
  const now = fileFacts(file);
  expect({ ...now, mtime: 0 }).toEqual({ ...before, mtime: 0 });
  expect(await f.nonces.undoRecord(w.nonce)).toMatchObject({ state: 'restored' });
  expect(existsSync(callFolder(w.nonce))).toBe(false);
});

test('changed after the write: the card says what changed, the undo refuses, and the later content stays', async () => {
  writeFileSync(join(f.root, 'a.txt'), 'first');
  writeFileSync(join(f.root, 'b.txt'), 'first');
  const over = await written('a.txt', 'second', 'overwrite');
  const app = await written('b.txt', ' second', 'append');
  writeFileSync(join(f.root, 'a.txt'), 'third');
  appendFileSync(join(f.root, 'b.txt'), ' third');

  const a = await undone(over.callId, 'a.txt');
  expect(a.warnings).toContain(`${realpathSync(f.root)}/a.txt changed after the write (its content is not what the write left); nothing was put back`);
  expect(a.result.ok).toBe(false);
  expect(readFileSync(join(f.root, 'a.txt'), 'utf8')).toBe('third');
  expect(readFileSync(join(callFolder(over.nonce), 'before'), 'utf8')).toBe('first');

  const b = await undone(app.callId, 'b.txt');
  expect(b.warnings).toContain(`${realpathSync(f.root)}/b.txt changed after the append (its content is not what the append left); nothing was cut`);
  expect(b.result.ok).toBe(false);
  expect(readFileSync(join(f.root, 'b.txt'), 'utf8')).toBe('first second third');
  expect(await f.nonces.undoRecords({ jobId: 'job-1', state: 'held', limit: 10 })).toHaveLength(2);
});

test('replaced or deleted after the write, or the kept file changed: refused, naming why', async () => {
  writeFileSync(join(f.root, 'c.txt'), 'old');
  writeFileSync(join(f.root, 'd.txt'), 'old');
  writeFileSync(join(f.root, 'e.txt'), 'old');
  const c = await written('c.txt', 'new', 'append');
  const d = await written('d.txt', 'new', 'overwrite');
  const e = await written('e.txt', 'new', 'overwrite');
  // The same bytes in another file: an append is cut only on the inode it was made on.
  writeFileSync(join(f.root, 'c2.txt'), 'oldnew');
  renameSync(join(f.root, 'c2.txt'), join(f.root, 'c.txt'));
  rmSync(join(f.root, 'd.txt'));
  writeFileSync(join(callFolder(e.nonce), 'before'), 'OLD');

  expect((await undone(c.callId, 'c.txt')).warnings).toContain(`is another file than the one call ${c.callId} of job job-1 appended to (replaced since); nothing was cut`);
  expect((await undone(d.callId, 'd.txt')).warnings).toContain('d.txt is not there now (deleted or moved after the write): undo that first, then this');
  const kept = await undone(e.callId, 'e.txt');
  expect(kept.warnings).toContain(`what airlock keeps for call ${e.callId} of job job-1 was changed (its content); nothing was put back`);
  expect(kept.result.ok).toBe(false);
  expect(readFileSync(join(f.root, 'e.txt'), 'utf8')).toBe('new');
  expect(readFileSync(join(f.root, 'c.txt'), 'utf8')).toBe('oldnew');
});

test('after its undo time, and after retention purged the old file: refused; the written content stays', async () => {
  writeFileSync(join(f.root, 'old.txt'), 'old');
  f.gate = await gateWith({ now: () => Date.now() - 8 * DAY });
  const w = await written('old.txt', 'new', 'overwrite');
  f.gate = await gateWith();
  expect((await undone(w.callId, 'old.txt')).warnings).toMatch(/the undo time of call .* ended on .*; what it changed cannot be put back/);
  expect(await purgeExpiredHolds(f.undo, f.nonces, Date.now())).toBe(1);
  expect(existsSync(callFolder(w.nonce))).toBe(false);
  expect((await undone(w.callId, 'old.txt')).result).toMatchObject({ ok: false });
  expect(readFileSync(join(f.root, 'old.txt'), 'utf8')).toBe('new');
});

test('a file with other names (hard links) is written and put back in place, under every name; an append that would pass the compare limit is not kept, and its card says so', async () => {
  writeFileSync(join(f.root, 'linked.txt'), 'shared');
  linkSync(join(f.root, 'linked.txt'), join(f.root, 'other-name.txt'));
  const w = await written('linked.txt', 'changed', 'overwrite');
  expect(w.undo).toEqual({ reversible: true, keepDays: 7 });
  expect(readFileSync(join(f.root, 'other-name.txt'), 'utf8')).toBe('changed');
  expect((await undone(w.callId, 'linked.txt')).result).toMatchObject({ ok: true });
  expect(readFileSync(join(f.root, 'other-name.txt'), 'utf8')).toBe('shared');
  expect(statSync(join(f.root, 'linked.txt')).nlink).toBe(2);

  // A small hash limit: the append would pass it, so its result could not be compared.
  const files = createFileCapability(await Roots.create([f.root]), { undo: f.undo, undoRecords: f.nonces, hashLimitBytes: 10 });
  writeFileSync(join(f.root, 'big.log'), '12345678');
  expect(await files.reversibility('big.log', 0, { kind: 'append', adds: 5 })).toEqual({ reversible: false, why: `${realpathSync(f.root)}/big.log would be too large to compare after the append (over 10 bytes)` });
  expect(await files.reversibility('big.log', 0, { kind: 'append', adds: 2 })).toEqual({ reversible: true, keepDays: 7 });
  const append = await writeCall('fs_write', { path: 'big.log', content: 'this is long', mode: 'append' });
  expect(actionSentence({ toolName: 'fs_write', args: append.input.args, observed: append.prepared.observed, target: '' })).not.toContain('reversible');
});

test("a worker running as an ordinary user: another user's file it may write is kept and put back in place (its owner stays); its own read-only file is refused as without undo, keeping nothing", () => {
  const share = join(f.dir, 'nobody-share');
  mkdirSync(share);
  chownSync(share, 65534, 65534);
  chmodSync(f.dir, 0o755);
  writeFileSync(join(share, 'theirs.txt'), 'theirs');
  chmodSync(join(share, 'theirs.txt'), 0o666);
  writeFileSync(join(share, 'mine.txt'), 'mine');
  chownSync(join(share, 'mine.txt'), 65534, 65534);
  chmodSync(join(share, 'mine.txt'), 0o444);
  const theirs = fileFacts(join(share, 'theirs.txt'));
  const answer = asNobody(f.dir, share, `
    const before = await files.observe('theirs.txt', { follow: false });
    const nonce = 'ab'.repeat(16);
    answer.wrote = await files.write('theirs.txt', 'by nobody', 'overwrite', { key: nonce, required: true, bytes: 6 });
    answer.between = require('node:fs').readFileSync(root + '/theirs.txt', 'utf8');
    const place = await files.held(nonce);
    await store.recordUndo({ schemaVersion: 1, nonce, jobId: 'j', callId: 'c', toolName: 'fs_write', root, pathDigest: pathDigest(before.path),
      held: { type: 'file', bytes: before.size, files: null, digest: before.sha256, mode: before.mode, dev: before.dev, ino: before.ino, mtimeMs: before.mtimeMs },
      change: place.change, heldAt: new Date().toISOString(), expiresAt: new Date(Date.now() + 864e5).toISOString(), state: 'held' });
    answer.restored = await files.restore({ job: 'j', call: 'c', path: 'theirs.txt' });
    answer.readOnly = await files.write('mine.txt', 'changed', 'overwrite', { key: 'cd'.repeat(16), required: true, bytes: 4 });
    answer.keptForReadOnly = require('node:fs').existsSync(root + '/.airlock-undo/' + 'cd'.repeat(16));`);
  expect(answer).toMatchObject({
    wrote: { ok: true, output: expect.stringContaining('kept for 7 days') },
    between: 'by nobody',
    restored: { ok: true },
    readOnly: { ok: false, output: `Error: permission denied: mine.txt` },
    keptForReadOnly: false,
  });
  // Only a file's owner may set its times: another user's file keeps the time of the undo.
  expect({ ...fileFacts(join(share, 'theirs.txt')), mtime: 0 }).toEqual({ ...theirs, mtime: 0 });
  expect(readFileSync(join(share, 'mine.txt'), 'utf8')).toBe('mine');
});

test('a holding folder another user made, or others may write in, is not trusted: nothing is kept in it and nothing put back from it', async () => {
  writeFileSync(join(f.root, 'config.txt'), 'safe');
  mkdirSync(join(f.root, '.airlock-undo'), { mode: 0o777 });
  chmodSync(join(f.root, '.airlock-undo'), 0o777);
  const { prepared, input } = await writeCall('fs_write', { path: 'config.txt', content: 'new', mode: 'overwrite' });
  expect(prepared.undo).toEqual({ reversible: true, keepDays: 7 });
  const result = await run(input);
  expect(result).toMatchObject({ ok: false, output: expect.stringContaining(`${realpathSync(f.root)}/.airlock-undo is not airlock's alone (others may write in it (mode 777))`) });
  expect(readFileSync(join(f.root, 'config.txt'), 'utf8')).toBe('safe');

  chmodSync(join(f.root, '.airlock-undo'), 0o700);
  const w = await written('config.txt', 'new', 'overwrite');
  // Someone swaps the call's folder for one of theirs, holding content of their choosing.
  renameSync(callFolder(w.nonce), join(f.dir, 'taken'));
  mkdirSync(callFolder(w.nonce));
  writeFileSync(join(callFolder(w.nonce), 'before'), 'planted');
  chownSync(callFolder(w.nonce), 65534, 65534);
  const u = await undone(w.callId, 'config.txt');
  expect(u.result.ok).toBe(false);
  expect(readFileSync(join(f.root, 'config.txt'), 'utf8')).toBe('new');
});

describe('a kill between any two steps', () => {
  test('after keeping the content before and before writing: the retry sees nothing changed, runs it once and records it', async () => {
    const file = join(f.root, 'k.txt');
    writeFileSync(file, 'old');
    const call = await writeCall('fs_write', { path: 'k.txt', content: 'new', mode: 'overwrite' });
    await consumedBy(call);
    keptOld(call.prepared.nonce, file, 'new');
    expect(await run(call.input, 2)).toMatchObject({ ok: true, reconciled: 'ran_now' });
    expect(readFileSync(file, 'utf8')).toBe('new');
    expect(await f.nonces.undoRecord(call.prepared.nonce)).toMatchObject({ state: 'held', change: { kind: 'replaced' } });
    expect((await undone(call.input.callId, 'k.txt')).result).toMatchObject({ ok: true });
    expect(readFileSync(file, 'utf8')).toBe('old');
  });

  test('cut part way through the write (truncated, part written): the retry finishes it, as approved, and records it once; the undo puts the content before back', async () => {
    const file = join(f.root, 'r.txt');
    const old = 'old content, longer than the new';
    writeFileSync(file, old);
    const ino = statSync(file).ino;
    const call = await writeCall('fs_write', { path: 'r.txt', content: 'new content', mode: 'overwrite' });
    await consumedBy(call);
    keptOld(call.prepared.nonce, file, 'new content');
    // What the killed write left: its mark, the truncate, part of the content.
    writeFileSync(join(callFolder(call.prepared.nonce), 'writing'), '');
    writeFileSync(file, 'new co');
    expect(await run(call.input, 2)).toMatchObject({ ok: true, reconciled: 'ran_before' });
    expect(readFileSync(file, 'utf8')).toBe('new content');
    expect(statSync(file).ino).toBe(ino);
    expect(await f.nonces.undoRecord(call.prepared.nonce)).toMatchObject({ change: { kind: 'replaced' } });
    expect((await undone(call.input.callId, 'r.txt')).result).toMatchObject({ ok: true });
    expect(readFileSync(file, 'utf8')).toBe(old);
  });

  test('a file that holds neither the content before, nor part of what was written, or one emptied by someone after the write finished: never finished, the outcome is reported unknown', async () => {
    for (const [name, later, writing] of [['n.txt', 'someone else', true], ['e.txt', '', false], ['p.txt', 'ne', false]] as const) {
      const file = join(f.root, name);
      writeFileSync(file, 'old');
      const call = await writeCall('fs_write', { path: name, content: 'new', mode: 'overwrite' });
      await consumedBy(call);
      keptOld(call.prepared.nonce, file, 'new');
      if (writing) writeFileSync(join(callFolder(call.prepared.nonce), 'writing'), '');
      writeFileSync(file, later);
      expect(await run(call.input, 2)).toMatchObject({ ok: false, reconciled: 'unknown' });
      expect(readFileSync(file, 'utf8')).toBe(later);
      expect(await f.nonces.undoRecord(call.prepared.nonce)).toBeUndefined();
    }
  });

  test('an append killed after its marker and before the append, part way through it, or after it and before the record: appended once, whole, recorded once', async () => {
    for (const [done, reconciled] of [['', 'ran_now'], ['bb', 'ran_before'], ['bbbb\n', 'ran_before']] as const) {
      const name = `log-${done.length}.txt`;
      const file = join(f.root, name);
      writeFileSync(file, 'a\n');
      const s = statSync(file);
      const call = await writeCall('fs_write', { path: name, content: 'bbbb\n', mode: 'append' });
      await consumedBy(call);
      mkdirSync(callFolder(call.prepared.nonce), { recursive: true, mode: 0o700 });
      writeFileSync(join(callFolder(call.prepared.nonce), 'write.json'), JSON.stringify({ kind: 'appended', size: 2, after: sha('a\nbbbb\n'), dev: s.dev, ino: s.ino, born: s.birthtimeMs }));
      // Its mark is there from right before the append until right after it.
      if (done !== '') writeFileSync(join(callFolder(call.prepared.nonce), 'writing'), '');
      appendFileSync(file, done);
      expect(await run(call.input, 2)).toMatchObject({ ok: true, reconciled });
      expect(readFileSync(file, 'utf8')).toBe('a\nbbbb\n');
      expect(await f.nonces.undoRecord(call.prepared.nonce)).toMatchObject({ state: 'held', change: { kind: 'appended', size: 2 } });
      expect((await undone(call.input.callId, name)).result).toMatchObject({ ok: true });
      expect(readFileSync(file, 'utf8')).toBe('a\n');
    }
  });

  test('an undo cut part way through writing the content back: the next attempt finishes it, once', async () => {
    const file = join(f.root, 'u.txt');
    writeFileSync(file, 'the old content');
    const before = fileFacts(file);
    const w = await written('u.txt', 'new', 'overwrite');
    const call = await undoCall('fs_undo', { job: 'job-1', call: w.callId, path: 'u.txt' });
    await consumedBy(call);
    // What the killed undo did: its mark, the truncate, part of the content.
    writeFileSync(join(callFolder(w.nonce), 'undoing'), '');
    writeFileSync(file, 'the old');
    expect(await run(call.input, 2)).toMatchObject({ ok: true, reconciled: 'ran_before' });
    expect(fileFacts(file)).toEqual(before);
    expect(await f.nonces.undoRecord(w.nonce)).toMatchObject({ state: 'restored' });
    expect(existsSync(callFolder(w.nonce))).toBe(false);
  });

  test('an undo that finished writing back and was killed before its record, then the file emptied by someone: the retry never takes that for its own and refuses', async () => {
    const file = join(f.root, 'z.txt');
    writeFileSync(file, 'old');
    const w = await written('z.txt', 'new', 'overwrite');
    const call = await undoCall('fs_undo', { job: 'job-1', call: w.callId, path: 'z.txt' });
    await consumedBy(call);
    // The killed undo wrote it all back and cleared its mark; then someone emptied the file.
    writeFileSync(file, '');
    expect(await run(call.input, 2)).toMatchObject({ ok: false });
    expect(readFileSync(file, 'utf8')).toBe('');
    expect(await f.nonces.undoRecord(w.nonce)).toMatchObject({ state: 'held' });
  });

  test('an append\'s undo killed after the cut and before its record: the next attempt finishes it', async () => {
    const file = join(f.root, 'v.txt');
    writeFileSync(file, 'v1');
    const w = await written('v.txt', 'v2', 'append');
    const { prepared, input } = await undoCall('fs_undo', { job: 'job-1', call: w.callId, path: 'v.txt' });
    await consumedBy({ prepared, input });
    writeFileSync(file, 'v1');
    expect(await run(input, 2)).toMatchObject({ ok: true, reconciled: 'ran_before' });
    expect(readFileSync(file, 'utf8')).toBe('v1');
    expect(await f.nonces.undoRecord(w.nonce)).toMatchObject({ state: 'restored' });
  });
});

test('eight undos of one overwrite at once: the old content comes back exactly once; the others refuse', async () => {
  writeFileSync(join(f.root, 'once.txt'), 'old');
  const before = fileFacts(join(f.root, 'once.txt'));
  const w = await written('once.txt', 'new', 'overwrite');
  const undos = [];
  for (let i = 0; i < 8; i++) undos.push((await undoCall('fs_undo', { job: 'job-1', call: w.callId, path: 'once.txt' })).input);
  const results = await Promise.all(undos.map((input) => run(input)));
  expect(results.filter((r) => r.ok)).toHaveLength(1);
  expect(fileFacts(join(f.root, 'once.txt'))).toEqual(before);
});
