import { createHash, generateKeyPairSync } from 'node:crypto';
import { appendFileSync, chmodSync, chownSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { createToolGateActivities, ExecuteInput, ExecuteResult } from '../../activities/tool-gate';
import { actionSentence } from '../../core/reviewer/action-sentence';
import type { SqliteNonceStore } from '../../host/nonces/sqlite-nonce-store';
import { Roots } from '../../host/roots';
import { purgeExpiredHolds } from '../../host/tools/holding';
import type { UndoSettings } from '../../host/tools/undo-settings';
import { approvedCalls } from '../helpers/approved-call';
import { asNobody, dropUndoRoot, freshUndoRoot, gateOver, runAttempt } from '../helpers/undo-root';

/**
 * Reversible writes through the real gate activities on real folders: an
 * overwrite (a truncate is an overwrite with nothing) keeps the old file
 * and puts it back whole, inode and all; an append is cut back to its
 * length. Each undo refuses once the file holds anything but what the
 * write left, and a kill between any two steps leaves the old content or
 * the new, finished once by the next attempt.
 */
let dir: string;
let root: string;
let nonces: SqliteNonceStore;
let undo: UndoSettings;
let gate: ReturnType<typeof createToolGateActivities>;
const keys = generateKeyPairSync('ed25519');
const DAY = 24 * 3600 * 1000;
const sha = (text: string | Buffer) => createHash('sha256').update(text).digest('hex');

const gateWith = (options: { readonly now?: () => number } = {}) => gateOver({ dir, root, nonces, undo }, keys.publicKey, options);

const writeCall = approvedCalls({ gate: () => gate, privateKey: keys.privateKey, jobId: 'job-1' });
const undoCall = approvedCalls({ gate: () => gate, privateKey: keys.privateKey, jobId: 'undo-job-1' });
const run = (input: ExecuteInput, attempt = 1): Promise<ExecuteResult> => runAttempt(gate, input, attempt);
const callFolder = (nonce: string) => join(root, '.airlock-undo', nonce);

beforeEach(async () => {
  ({ dir, root, nonces, undo } = freshUndoRoot('airlock-undo-write-'));
  gate = await gateWith();
});
afterEach(() => dropUndoRoot({ dir, root, nonces, undo }));

/** What a user relies on of a file: its bytes, inode, mode, owner and modification time. */
function fileFacts(path: string) {
  const s = statSync(path);
  return { bytes: sha(readFileSync(path)), ino: s.ino, dev: s.dev, mode: s.mode, uid: s.uid, gid: s.gid, mtime: s.mtimeMs, nlink: s.nlink };
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
  await nonces.consume({ nonce: prepared.nonce, jobId: input.jobId, callId: input.callId, fingerprint: input.grant.claims.fingerprint, before: prepared.observed });
}

/** The old file's second name and the marker, as an overwrite killed after keeping them leaves its call's folder. */
function keptOld(nonce: string, file: string, content: string): void {
  mkdirSync(callFolder(nonce), { recursive: true });
  writeFileSync(join(callFolder(nonce), 'write.json'), JSON.stringify({ kind: 'replaced', after: sha(content), bytes: Buffer.byteLength(content) }));
  linkSync(file, join(callFolder(nonce), 'before'));
}

async function undone(callId: string, path: string) {
  const { prepared, input } = await undoCall('fs_undo', { job: 'job-1', call: callId, path });
  return { warnings: prepared.warnings.join('\n'), result: await run(input) };
}

test('an overwrite is undone byte for byte: the old file comes back with its inode, mode, owner and mtime; the new one goes', async () => {
  const file = join(root, 'budget.csv');
  writeFileSync(file, 'month,amount\njan,100\nfeb,120\n');
  chmodSync(file, 0o640);
  chownSync(file, 1000, 1000);
  utimesSync(file, new Date('2022-05-06'), new Date('2022-05-06'));
  const before = fileFacts(file);

  const w = await written('budget.csv', 'month,amount\n', 'overwrite');
  expect(w.sentence).toBe('Replace budget.csv (29 bytes) in / with 13 bytes — reversible for 7 days (airlock undo)');
  // The written file took the old one's place with its owner and permissions.
  const after = statSync(file);
  expect(readFileSync(file, 'utf8')).toBe('month,amount\n');
  expect({ mode: after.mode, uid: after.uid, gid: after.gid, nlink: after.nlink }).toEqual({ mode: before.mode, uid: 1000, gid: 1000, nlink: 1 });
  expect(after.ino).not.toBe(before.ino);
  expect(await nonces.undoRecord(w.nonce)).toMatchObject({ state: 'held', toolName: 'fs_write', held: { type: 'file', bytes: 29, digest: before.bytes, mode: '640' }, change: { kind: 'replaced', after: sha('month,amount\n') } });
  expect(await nonces.heldBytes(realpathSync(root))).toBe(29);

  const u = await undone(w.callId, 'budget.csv');
  expect(u.warnings).toBe('');
  expect(u.result).toMatchObject({ ok: true, output: `put ${realpathSync(root)}/budget.csv back as it was before the write` });
  expect(fileFacts(file)).toEqual(before);
  expect(await nonces.undoRecord(w.nonce)).toMatchObject({ state: 'restored' });
  expect(readdirSync(join(root, '.airlock-undo'))).toEqual([]);
  expect(await nonces.heldBytes(realpathSync(root))).toBe(0);
});

test('a truncate (an overwrite with nothing) is undone: the content comes back whole', async () => {
  const file = join(root, 'app.log');
  const content = Buffer.alloc(300_000, 'log line\n');
  writeFileSync(file, content);
  const before = fileFacts(file);
  const w = await written('app.log', '', 'overwrite');
  expect(statSync(file).size).toBe(0);
  expect((await undone(w.callId, 'app.log')).result).toMatchObject({ ok: true });
  expect(fileFacts(file)).toEqual(before);
});

test('an append is undone: cut back to its length, the same inode, nothing set aside', async () => {
  const file = join(root, 'notes.md');
  writeFileSync(file, '# Notes\n');
  chmodSync(file, 0o600);
  const before = fileFacts(file);
  const w = await written('notes.md', '- buy milk\n', 'append');
  expect(w.sentence).toBe('Append 11 bytes to notes.md (8 bytes now) in / — reversible for 7 days (airlock undo)');
  expect(readFileSync(file, 'utf8')).toBe('# Notes\n- buy milk\n');
  expect(await nonces.undoRecord(w.nonce)).toMatchObject({ state: 'held', change: { kind: 'appended', size: 8, after: sha('# Notes\n- buy milk\n') } });
  expect(await nonces.heldBytes(realpathSync(root))).toBe(0);

  const u = await undone(w.callId, 'notes.md');
  expect(u.result).toMatchObject({ ok: true, output: `took the appended bytes off ${realpathSync(root)}/notes.md (back to 8 bytes)` });
  const now = fileFacts(file);
  expect({ ...now, mtime: 0 }).toEqual({ ...before, mtime: 0 });
  expect(await nonces.undoRecord(w.nonce)).toMatchObject({ state: 'restored' });
  expect(existsSync(callFolder(w.nonce))).toBe(false);
});

test('changed after the write: the card says what changed, the undo refuses, and the later content stays', async () => {
  writeFileSync(join(root, 'a.txt'), 'first');
  writeFileSync(join(root, 'b.txt'), 'first');
  const over = await written('a.txt', 'second', 'overwrite');
  const app = await written('b.txt', ' second', 'append');
  writeFileSync(join(root, 'a.txt'), 'third');
  appendFileSync(join(root, 'b.txt'), ' third');

  const a = await undone(over.callId, 'a.txt');
  expect(a.warnings).toContain(`${realpathSync(root)}/a.txt changed after the write (its content is not what the write left); nothing was put back`);
  expect(a.result.ok).toBe(false);
  expect(readFileSync(join(root, 'a.txt'), 'utf8')).toBe('third');
  expect(readFileSync(join(callFolder(over.nonce), 'before'), 'utf8')).toBe('first');

  const b = await undone(app.callId, 'b.txt');
  expect(b.warnings).toContain(`${realpathSync(root)}/b.txt changed after the append (its content is not what the append left); nothing was cut`);
  expect(b.result.ok).toBe(false);
  expect(readFileSync(join(root, 'b.txt'), 'utf8')).toBe('first second third');
  expect(await nonces.undoRecords({ jobId: 'job-1', state: 'held', limit: 10 })).toHaveLength(2);
});

test('replaced or deleted after the write, or the kept file changed: refused, naming why', async () => {
  writeFileSync(join(root, 'c.txt'), 'old');
  writeFileSync(join(root, 'd.txt'), 'old');
  writeFileSync(join(root, 'e.txt'), 'old');
  const c = await written('c.txt', 'new', 'append');
  const d = await written('d.txt', 'new', 'overwrite');
  const e = await written('e.txt', 'new', 'overwrite');
  // The same bytes in another file: an append is cut only on the inode it was made on.
  writeFileSync(join(root, 'c2.txt'), 'oldnew');
  renameSync(join(root, 'c2.txt'), join(root, 'c.txt'));
  rmSync(join(root, 'd.txt'));
  appendFileSync(join(callFolder(e.nonce), 'before'), '!');

  expect((await undone(c.callId, 'c.txt')).warnings).toContain(`is another file than the one call ${c.callId} of job job-1 appended to (replaced since); nothing was cut`);
  expect((await undone(d.callId, 'd.txt')).warnings).toContain('d.txt is not there now (deleted or moved after the write): undo that first, then this');
  const kept = await undone(e.callId, 'e.txt');
  expect(kept.warnings).toContain('was changed (its content changed since it was kept); nothing was restored');
  expect(kept.result.ok).toBe(false);
  expect(readFileSync(join(root, 'e.txt'), 'utf8')).toBe('new');
  expect(readFileSync(join(root, 'c.txt'), 'utf8')).toBe('oldnew');
});

test('after its undo time, and after retention purged the old file: refused; the written content stays', async () => {
  writeFileSync(join(root, 'old.txt'), 'old');
  gate = await gateWith({ now: () => Date.now() - 8 * DAY });
  const w = await written('old.txt', 'new', 'overwrite');
  gate = await gateWith();
  expect((await undone(w.callId, 'old.txt')).warnings).toMatch(/the undo time of call .* ended on .*; what it changed cannot be put back/);
  expect(await purgeExpiredHolds(undo, nonces, Date.now())).toBe(1);
  expect(existsSync(callFolder(w.nonce))).toBe(false);
  expect((await undone(w.callId, 'old.txt')).result).toMatchObject({ ok: false });
  expect(readFileSync(join(root, 'old.txt'), 'utf8')).toBe('new');
});

test('what cannot be kept says so on the card and is written in place as before: another name (hard link), set-id bits, a file past the compare limit for an append', async () => {
  writeFileSync(join(root, 'linked.txt'), 'shared');
  linkSync(join(root, 'linked.txt'), join(root, 'other-name.txt'));
  writeFileSync(join(root, 'tool'), 'binary');
  chmodSync(join(root, 'tool'), 0o4755);
  const linked = await writeCall('fs_write', { path: 'linked.txt', content: 'changed', mode: 'overwrite' });
  expect(linked.prepared.undo).toEqual({ reversible: false, why: `${realpathSync(root)}/linked.txt has other names (hard links), which would keep the old content` });
  expect(actionSentence({ toolName: 'fs_write', args: linked.input.args, observed: linked.prepared.observed, target: '', ...(linked.prepared.undo !== undefined ? { undo: linked.prepared.undo } : {}) })).toContain('the old content is lost');
  const ino = statSync(join(root, 'linked.txt')).ino;
  expect(await run(linked.input)).toMatchObject({ ok: true });
  // In place, as an overwrite without undo: both names see the new content.
  expect(statSync(join(root, 'linked.txt')).ino).toBe(ino);
  expect(readFileSync(join(root, 'other-name.txt'), 'utf8')).toBe('changed');
  expect(await nonces.undoRecord(linked.prepared.nonce)).toBeUndefined();

  const setid = await writeCall('fs_write', { path: 'tool', content: 'x', mode: 'overwrite' });
  expect(setid.prepared.undo).toMatchObject({ reversible: false, why: expect.stringContaining('has set-id bits') });

  // A small hash limit: the append would pass it, so its result could not be compared.
  const roots = await Roots.create([root]);
  const { createFileCapability } = await import('../../host/tools/file-host');
  const files = createFileCapability(roots, { undo, undoRecords: nonces, hashLimitBytes: 10 });
  writeFileSync(join(root, 'big.log'), '12345678');
  expect(await files.reversibility('big.log', 0, { kind: 'append', adds: 5 })).toEqual({ reversible: false, why: `${realpathSync(root)}/big.log would be too large to compare after the append (over 10 bytes)` });
  expect(await files.reversibility('big.log', 0, { kind: 'append', adds: 2 })).toEqual({ reversible: true, keepDays: 7 });
});

test("a worker running as an ordinary user: its own file's overwrite is kept and undone; another user's file it may write is not reversible and is written in place", () => {
  const share = join(dir, 'nobody-share');
  mkdirSync(share);
  chownSync(share, 65534, 65534);
  chmodSync(dir, 0o755);
  writeFileSync(join(share, 'mine.txt'), 'mine');
  chownSync(join(share, 'mine.txt'), 65534, 65534);
  writeFileSync(join(share, 'theirs.txt'), 'theirs');
  chmodSync(join(share, 'theirs.txt'), 0o666);
  const mine = fileFacts(join(share, 'mine.txt'));
  const theirs = statSync(join(share, 'theirs.txt')).ino;
  const answer = asNobody(dir, share, `
    answer.theirs = await files.reversibility('theirs.txt', 6, { kind: 'replace' });
    answer.mine = await files.reversibility('mine.txt', 4, { kind: 'replace' });
    answer.wroteTheirs = await files.write('theirs.txt', 'by nobody', 'overwrite', { key: 'cd'.repeat(16), required: false });
    const before = await files.observe('mine.txt', { follow: false });
    const nonce = 'ab'.repeat(16);
    answer.wroteMine = await files.write('mine.txt', 'changed', 'overwrite', { key: nonce, required: true, bytes: 4 });
    const place = await files.held(nonce);
    await store.recordUndo({ schemaVersion: 1, nonce, jobId: 'j', callId: 'c', toolName: 'fs_write', root, pathDigest: pathDigest(before.path),
      held: { type: 'file', bytes: before.size, files: null, digest: before.sha256, mode: before.mode, dev: before.dev, ino: before.ino },
      change: place.change, heldAt: new Date().toISOString(), expiresAt: new Date(Date.now() + 864e5).toISOString(), state: 'held' });
    answer.restored = await files.restore({ job: 'j', call: 'c', path: 'mine.txt' });`);
  const real = realpathSync(share);
  expect(answer).toMatchObject({
    theirs: { reversible: false, why: `${real}/theirs.txt belongs to another user, and its new content would be airlock's` },
    mine: { reversible: true, keepDays: 7 },
    wroteTheirs: { ok: true, output: `wrote 9 bytes to ${real}/theirs.txt (overwrite)` },
    wroteMine: { ok: true },
    restored: { ok: true },
  });
  // Theirs written in place: its inode and owner kept.
  expect(statSync(join(share, 'theirs.txt'))).toMatchObject({ ino: theirs, uid: 0 });
  expect(readFileSync(join(share, 'theirs.txt'), 'utf8')).toBe('by nobody');
  expect(fileFacts(join(share, 'mine.txt'))).toEqual(mine);
});

describe('a kill between any two steps', () => {
  test('after keeping the old file and before the new one took its place: the retry sees nothing changed, drops the second name, runs it once and records it', async () => {
    const file = join(root, 'k.txt');
    writeFileSync(file, 'old');
    const { prepared, input } = await writeCall('fs_write', { path: 'k.txt', content: 'new', mode: 'overwrite' });
    await consumedBy({ prepared, input });
    // What the killed attempt left: its marker and the old file's second name (and a new file not yet renamed).
    keptOld(prepared.nonce, file, 'new');
    writeFileSync(join(callFolder(prepared.nonce), 'new'), 'ne');
    expect(statSync(file).nlink).toBe(2);

    expect(await run(input, 2)).toMatchObject({ ok: true, reconciled: 'ran_now' });
    expect(readFileSync(file, 'utf8')).toBe('new');
    expect(readdirSync(callFolder(prepared.nonce))).toEqual(['before', 'write.json']);
    expect(await nonces.undoRecord(prepared.nonce)).toMatchObject({ state: 'held', change: { kind: 'replaced' } });
    expect((await undone(input.callId, 'k.txt')).result).toMatchObject({ ok: true });
    expect(readFileSync(file, 'utf8')).toBe('old');
  });

  test('after the new file took its place and before the record: the retry finds it ran, records it once', async () => {
    const file = join(root, 'r.txt');
    writeFileSync(file, 'old');
    const oldIno = statSync(file).ino;
    const { prepared, input } = await writeCall('fs_write', { path: 'r.txt', content: 'new', mode: 'overwrite' });
    await consumedBy({ prepared, input });
    keptOld(prepared.nonce, file, 'new');
    writeFileSync(join(callFolder(prepared.nonce), 'new'), 'new');
    renameSync(join(callFolder(prepared.nonce), 'new'), file);

    expect(await run(input, 2)).toMatchObject({ ok: true, reconciled: 'ran_before' });
    expect(readFileSync(file, 'utf8')).toBe('new');
    expect(await nonces.undoRecord(prepared.nonce)).toMatchObject({ held: { ino: oldIno }, change: { kind: 'replaced' } });
    expect((await undone(input.callId, 'r.txt')).result).toMatchObject({ ok: true });
    expect(statSync(file).ino).toBe(oldIno);
  });

  test('an append killed after its marker and before the append, or after the append and before the record: appended once, recorded once', async () => {
    for (const appended of [false, true]) {
      const name = `log-${appended}.txt`;
      const file = join(root, name);
      writeFileSync(file, 'a\n');
      const s = statSync(file);
      const { prepared, input } = await writeCall('fs_write', { path: name, content: 'b\n', mode: 'append' });
      await consumedBy({ prepared, input });
      mkdirSync(callFolder(prepared.nonce), { recursive: true });
      writeFileSync(join(callFolder(prepared.nonce), 'write.json'), JSON.stringify({ kind: 'appended', size: 2, after: sha('a\nb\n'), dev: s.dev, ino: s.ino, born: s.birthtimeMs }));
      if (appended) appendFileSync(file, 'b\n');
      expect(await run(input, 2)).toMatchObject({ ok: true, reconciled: appended ? 'ran_before' : 'ran_now' });
      expect(readFileSync(file, 'utf8')).toBe('a\nb\n');
      expect(await nonces.undoRecord(prepared.nonce)).toMatchObject({ state: 'held', change: { kind: 'appended', size: 2 } });
    }
  });

  test('an undo killed after the old file went back and before its record: the next attempt finishes it, once', async () => {
    const file = join(root, 'u.txt');
    writeFileSync(file, 'old');
    const before = fileFacts(file);
    const w = await written('u.txt', 'new', 'overwrite');
    const { prepared, input } = await undoCall('fs_undo', { job: 'job-1', call: w.callId, path: 'u.txt' });
    // What the killed undo did: consumed its grant, then its one rename.
    await consumedBy({ prepared, input });
    renameSync(join(callFolder(w.nonce), 'before'), file);
    expect(await run(input, 2)).toMatchObject({ ok: true, reconciled: 'ran_before' });
    expect(fileFacts(file)).toEqual(before);
    expect(await nonces.undoRecord(w.nonce)).toMatchObject({ state: 'restored' });
    expect(existsSync(callFolder(w.nonce))).toBe(false);
  });

  test('an append\'s undo killed after the cut and before its record: the next attempt finishes it', async () => {
    const file = join(root, 'v.txt');
    writeFileSync(file, 'v1');
    const w = await written('v.txt', 'v2', 'append');
    const { prepared, input } = await undoCall('fs_undo', { job: 'job-1', call: w.callId, path: 'v.txt' });
    await consumedBy({ prepared, input });
    writeFileSync(file, 'v1');
    expect(await run(input, 2)).toMatchObject({ ok: true, reconciled: 'ran_before' });
    expect(readFileSync(file, 'utf8')).toBe('v1');
    expect(await nonces.undoRecord(w.nonce)).toMatchObject({ state: 'restored' });
  });
});

test('eight undos of one overwrite at once: the old content comes back exactly once; the others refuse', async () => {
  writeFileSync(join(root, 'once.txt'), 'old');
  const before = fileFacts(join(root, 'once.txt'));
  const w = await written('once.txt', 'new', 'overwrite');
  const undos = [];
  for (let i = 0; i < 8; i++) undos.push((await undoCall('fs_undo', { job: 'job-1', call: w.callId, path: 'once.txt' })).input);
  const results = await Promise.all(undos.map((input) => run(input)));
  expect(results.filter((r) => r.ok)).toHaveLength(1);
  expect(fileFacts(join(root, 'once.txt'))).toEqual(before);
});
