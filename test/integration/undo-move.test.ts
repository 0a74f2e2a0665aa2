import { createHash, generateKeyPairSync } from 'node:crypto';
import { appendFileSync, chmodSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, statSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ExecuteInput, ExecuteResult } from '../../activities/tool-gate';
import { actionSentence } from '../../core/reviewer/action-sentence';
import { approvedCalls } from '../helpers/approved-call';
import { runAttempt, undoFixture } from '../helpers/undo-root';
import { treeListing } from '../helpers/tree-listing';

/**
 * Reversible moves through the real gate activities on real folders: the
 * moved entry goes back where it was (inode and all), and a file the move
 * replaced, kept under a second name, goes back at the destination. The
 * undo refuses once the moved entry changed or moved on, or its old place
 * is taken; a kill between any two steps is finished once by the retry.
 */
const keys = generateKeyPairSync('ed25519');
const f = undoFixture('airlock-undo-move-', keys.publicKey);
const sha = (text: string | Buffer) => createHash('sha256').update(text).digest('hex');

const moveCall = approvedCalls({ gate: () => f.gate, privateKey: keys.privateKey, jobId: 'job-1' });
const undoCall = approvedCalls({ gate: () => f.gate, privateKey: keys.privateKey, jobId: 'undo-job-1' });
const run = (input: ExecuteInput, attempt = 1): Promise<ExecuteResult> => runAttempt(f.gate, input, attempt);
const callFolder = (nonce: string) => join(f.root, '.airlock-undo', nonce);

/** What a move killed after keeping its marks leaves: the grant consumed, `move.json` naming the entry, and the file at `to` under a second name when there is one. */
async function keptMove(call: Awaited<ReturnType<typeof moveCall>>, from: string, to: string): Promise<string> {
  const { prepared, input } = call;
  await f.nonces.consume({ nonce: prepared.nonce, jobId: input.jobId, callId: input.callId, fingerprint: input.grant.claims.fingerprint, before: prepared.observed });
  const s = statSync(join(f.root, from));
  mkdirSync(callFolder(prepared.nonce), { recursive: true, mode: 0o700 });
  writeFileSync(join(callFolder(prepared.nonce), 'move.json'), JSON.stringify({ kind: 'moved', dev: s.dev, ino: s.ino, born: s.birthtimeMs }));
  if (existsSync(join(f.root, to))) linkSync(join(f.root, to), join(callFolder(prepared.nonce), 'replaced'));
  return prepared.nonce;
}

function fileFacts(path: string) {
  const s = statSync(path);
  return { bytes: sha(readFileSync(path)), ino: s.ino, dev: s.dev, mode: s.mode, mtime: s.mtimeMs, nlink: s.nlink };
}

async function moved(from: string, to: string, overwrite = false) {
  const { prepared, input } = await moveCall('fs_move', { from, to, overwrite });
  const sentence = actionSentence({ toolName: 'fs_move', args: input.args, observed: prepared.observed, target: '', ...(prepared.undo !== undefined ? { undo: prepared.undo } : {}) });
  expect(await run(input)).toMatchObject({ ok: true });
  return { callId: input.callId, nonce: prepared.nonce, sentence };
}

async function movedBack(callId: string, from: string, to: string | undefined) {
  const { prepared, input } = await undoCall('fs_undo', { job: 'job-1', call: callId, path: from, ...(to !== undefined ? { to } : {}) });
  const sentence = actionSentence({ toolName: 'fs_undo', args: input.args, observed: prepared.observed, target: '' });
  return { warnings: prepared.warnings.join('\n'), sentence, result: await run(input) };
}

test('a file moved (renamed) is moved back: its inode, bytes, mode and mtime at its old place, nothing left at the new one', async () => {
  const file = join(f.root, 'draft.txt');
  writeFileSync(file, 'draft');
  chmodSync(file, 0o640);
  utimesSync(file, new Date('2020-01-02'), new Date('2020-01-02'));
  mkdirSync(join(f.root, 'done'));
  const before = fileFacts(file);
  const m = await moved('draft.txt', 'done/final.txt');
  expect(m.sentence).toBe('Move draft.txt (5 bytes) in / to done/final.txt — reversible for 7 days (airlock undo)');
  expect(await f.nonces.undoRecord(m.nonce)).toMatchObject({ state: 'held', toolName: 'fs_move', change: { kind: 'moved' }, asideBytes: 0 });

  const u = await movedBack(m.callId, 'draft.txt', 'done/final.txt');
  expect(u.sentence).toBe(`Undo call ${m.callId} of job job-1: move final.txt in done back to draft.txt`);
  expect(u.warnings).toBe('');
  expect(u.result).toMatchObject({ ok: true, output: `moved ${realpathSync(f.root)}/done/final.txt back to ${realpathSync(f.root)}/draft.txt` });
  expect(fileFacts(file)).toEqual(before);
  expect(existsSync(join(f.root, 'done', 'final.txt'))).toBe(false);
  expect(await f.nonces.undoRecord(m.nonce)).toMatchObject({ state: 'restored' });
  expect(readdirSync(join(f.root, '.airlock-undo'))).toEqual([]);
});

test('a folder of 500 files moved is moved back whole by one rename', async () => {
  const folder = join(f.root, 'album');
  for (let d = 0; d < 5; d++) {
    mkdirSync(join(folder, `d${d}`), { recursive: true });
    for (let f = 0; f < 100; f++) writeFileSync(join(folder, `d${d}`, `p${f}.jpg`), `photo ${d}/${f}`);
  }
  const listing = treeListing(folder);
  const ino = statSync(folder).ino;
  const m = await moved('album', 'album-2024');
  expect((await movedBack(m.callId, 'album', 'album-2024')).result).toMatchObject({ ok: true });
  expect(treeListing(folder)).toEqual(listing);
  expect(statSync(folder).ino).toBe(ino);
  expect(existsSync(join(f.root, 'album-2024'))).toBe(false);
});

test('a move that replaced a file: both come back byte for byte, the replaced one with its own inode; its bytes count against the quota while kept', async () => {
  writeFileSync(join(f.root, 'new.conf'), 'new settings');
  writeFileSync(join(f.root, 'app.conf'), 'old settings, 21 B');
  const source = fileFacts(join(f.root, 'new.conf'));
  const replaced = fileFacts(join(f.root, 'app.conf'));
  const m = await moved('new.conf', 'app.conf', true);
  expect(m.sentence).toBe('Move new.conf (12 bytes) in / to app.conf, replacing the file there — reversible for 7 days (airlock undo)');
  expect(readFileSync(join(f.root, 'app.conf'), 'utf8')).toBe('new settings');
  expect(await f.nonces.undoRecord(m.nonce)).toMatchObject({ change: { kind: 'moved', replaced: { bytes: 18, digest: replaced.bytes } }, asideBytes: 18 });
  expect(await f.nonces.heldBytes(realpathSync(f.root))).toBe(18);

  const u = await movedBack(m.callId, 'new.conf', 'app.conf');
  expect(u.result).toMatchObject({ ok: true, output: expect.stringContaining('and put back the file it replaced') });
  expect(fileFacts(join(f.root, 'new.conf'))).toEqual(source);
  expect(fileFacts(join(f.root, 'app.conf'))).toEqual(replaced);
  expect(await f.nonces.heldBytes(realpathSync(f.root))).toBe(0);
  expect(readdirSync(join(f.root, '.airlock-undo'))).toEqual([]);
});

test('refused, naming why, changing nothing: the old place taken again, the entry changed or moved on, another destination named, none named', async () => {
  for (const name of ['a', 'b', 'c', 'd']) writeFileSync(join(f.root, `${name}.txt`), name);
  const a = await moved('a.txt', 'a2.txt');
  const b = await moved('b.txt', 'b2.txt');
  const c = await moved('c.txt', 'c2.txt');
  const d = await moved('d.txt', 'd2.txt');
  writeFileSync(join(f.root, 'a.txt'), 'someone else');
  appendFileSync(join(f.root, 'b2.txt'), ' edited');
  renameSync(join(f.root, 'c2.txt'), join(f.root, 'c3.txt'));

  const real = realpathSync(f.root);
  expect((await movedBack(a.callId, 'a.txt', 'a2.txt')).warnings).toContain(`${real}/a.txt exists again (made after the move); move or delete it first, then undo again`);
  expect((await movedBack(b.callId, 'b.txt', 'b2.txt')).warnings).toContain(`${real}/b2.txt changed after the move (its content changed since it was kept); nothing was moved back`);
  expect((await movedBack(c.callId, 'c.txt', 'c3.txt')).warnings).toContain(`c3.txt is not where call ${c.callId} of job job-1 moved the entry; name that path`);
  expect((await movedBack(c.callId, 'c.txt', 'c2.txt')).warnings).toContain(`${real}/c2.txt is not the entry call ${c.callId} of job job-1 moved there (moved on or replaced since); nothing was moved back`);
  const none = await movedBack(d.callId, 'd.txt', undefined);
  expect(none.warnings).toContain(`name where call ${d.callId} of job job-1 moved the entry (its destination) to move it back`);
  expect(none.result.ok).toBe(false);
  expect(readFileSync(join(f.root, 'a.txt'), 'utf8')).toBe('someone else');
  expect(readFileSync(join(f.root, 'a2.txt'), 'utf8')).toBe('a');
  expect(readFileSync(join(f.root, 'b2.txt'), 'utf8')).toBe('b edited');
  expect(readFileSync(join(f.root, 'd2.txt'), 'utf8')).toBe('d');
  expect(await f.nonces.undoRecords({ jobId: 'job-1', state: 'held', limit: 10 })).toHaveLength(4);
});

test('a destination in a root not set up for undo: the card does not promise it, and the move runs as before', async () => {
  const other = join(f.dir, 'media');
  mkdirSync(other);
  writeFileSync(join(f.root, 'song.mp3'), 'la');
  const roots = [f.root, other];
  const { Roots } = await import('../../host/fs/roots');
  const { createToolGateActivities } = await import('../../activities/tool-gate');
  const { createGrantVerifier } = await import('../../host/keys/grant-keys');
  f.gate = createToolGateActivities({ roots: await Roots.create(roots), nonces: f.nonces, verifier: createGrantVerifier(keys.publicKey), claimStaleMs: 0, undo: f.undo });
  const { prepared, input } = await moveCall('fs_move', { from: 'song.mp3', to: join(other, 'song.mp3'), overwrite: false });
  expect(prepared.undo).toEqual({ reversible: false, why: `${realpathSync(other)} is not set up for undo` });
  expect(await run(input)).toMatchObject({ ok: true });
  expect(await f.nonces.undoRecord(prepared.nonce)).toBeUndefined();
  expect(existsSync(callFolder(prepared.nonce))).toBe(false);
});

describe('a kill between any two steps', () => {
  test('after keeping the file it replaces and before the rename: the retry sees nothing moved, drops the second name, moves once and records it', async () => {
    writeFileSync(join(f.root, 'src.txt'), 'src');
    writeFileSync(join(f.root, 'dst.txt'), 'dst');
    const call = await moveCall('fs_move', { from: 'src.txt', to: 'dst.txt', overwrite: true });
    const { prepared, input } = call;
    await keptMove(call, 'src.txt', 'dst.txt');

    expect(await run(input, 2)).toMatchObject({ ok: true, reconciled: 'ran_now' });
    expect(readFileSync(join(f.root, 'dst.txt'), 'utf8')).toBe('src');
    expect(existsSync(join(f.root, 'src.txt'))).toBe(false);
    expect(await f.nonces.undoRecord(prepared.nonce)).toMatchObject({ change: { kind: 'moved', replaced: { bytes: 3 } } });
    expect((await movedBack(input.callId, 'src.txt', 'dst.txt')).result).toMatchObject({ ok: true });
    expect(readFileSync(join(f.root, 'src.txt'), 'utf8')).toBe('src');
    expect(readFileSync(join(f.root, 'dst.txt'), 'utf8')).toBe('dst');
  });

  test('after the rename and before the record, and then moved back by hand: the file the move replaced stays kept (never dropped), and the outcome is unknown', async () => {
    writeFileSync(join(f.root, 'm.conf'), 'mine');
    writeFileSync(join(f.root, 'live.conf'), 'precious');
    const call = await moveCall('fs_move', { from: 'm.conf', to: 'live.conf', overwrite: true });
    const { prepared, input } = call;
    await keptMove(call, 'm.conf', 'live.conf');
    renameSync(join(f.root, 'm.conf'), join(f.root, 'live.conf'));
    renameSync(join(f.root, 'live.conf'), join(f.root, 'm.conf'));
    expect(await run(input, 2)).toMatchObject({ reconciled: 'unknown' });
    expect(readFileSync(join(callFolder(prepared.nonce), 'replaced'), 'utf8')).toBe('precious');
  });

  test('a file that appeared at the destination after the card and was replaced: kept, recorded, counted, and put back by the undo', async () => {
    writeFileSync(join(f.root, 'a.conf'), 'a');
    const call = await moveCall('fs_move', { from: 'a.conf', to: 'b.conf', overwrite: true });
    const { prepared, input } = call;
    // The killed attempt: a file appeared at b.conf just before it pinned it, was kept, and was replaced.
    writeFileSync(join(f.root, 'b.conf'), 'appeared, 21 bytes...');
    await keptMove(call, 'a.conf', 'b.conf');
    renameSync(join(f.root, 'a.conf'), join(f.root, 'b.conf'));
    expect(await run(input, 2)).toMatchObject({ ok: true, reconciled: 'ran_before' });
    expect(await f.nonces.undoRecord(prepared.nonce)).toMatchObject({ change: { kind: 'moved', replaced: { bytes: 21 } }, asideBytes: 21 });
    expect((await movedBack(input.callId, 'a.conf', 'b.conf')).result).toMatchObject({ ok: true });
    expect(readFileSync(join(f.root, 'a.conf'), 'utf8')).toBe('a');
    expect(readFileSync(join(f.root, 'b.conf'), 'utf8')).toBe('appeared, 21 bytes...');
  });

  test('after the rename and before the record: the retry finds it moved and records it once', async () => {
    writeFileSync(join(f.root, 'x.txt'), 'x');
    const call = await moveCall('fs_move', { from: 'x.txt', to: 'y.txt', overwrite: false });
    const { prepared, input } = call;
    await keptMove(call, 'x.txt', 'y.txt');
    renameSync(join(f.root, 'x.txt'), join(f.root, 'y.txt'));
    expect(await run(input, 2)).toMatchObject({ ok: true, reconciled: 'ran_before' });
    expect(await f.nonces.undoRecord(prepared.nonce)).toMatchObject({ state: 'held', change: { kind: 'moved' } });
  });

  test('an undo cut after the entry went back and before the replaced file did: the next attempt puts that back, once', async () => {
    writeFileSync(join(f.root, 'p.txt'), 'p');
    writeFileSync(join(f.root, 'q.txt'), 'q');
    const replaced = fileFacts(join(f.root, 'q.txt'));
    const m = await moved('p.txt', 'q.txt', true);
    const { prepared, input } = await undoCall('fs_undo', { job: 'job-1', call: m.callId, path: 'p.txt', to: 'q.txt' });
    await f.nonces.consume({ nonce: prepared.nonce, jobId: 'undo-job-1', callId: input.callId, fingerprint: input.grant.claims.fingerprint, before: prepared.observed });
    // What the killed undo did: the moved file back by its link and unlink.
    linkSync(join(f.root, 'q.txt'), join(f.root, 'p.txt'));
    unlinkSync(join(f.root, 'q.txt'));
    expect(await run(input, 2)).toMatchObject({ ok: true, reconciled: 'ran_before' });
    expect(readFileSync(join(f.root, 'p.txt'), 'utf8')).toBe('p');
    expect(fileFacts(join(f.root, 'q.txt'))).toEqual(replaced);
    expect(await f.nonces.undoRecord(m.nonce)).toMatchObject({ state: 'restored' });
    expect(existsSync(callFolder(m.nonce))).toBe(false);
  });
});

test('eight undos of one move at once: moved back exactly once; the others refuse', async () => {
  writeFileSync(join(f.root, 'once.txt'), 'once');
  writeFileSync(join(f.root, 'there.txt'), 'there');
  const m = await moved('once.txt', 'there.txt', true);
  const undos = [];
  for (let i = 0; i < 8; i++) undos.push((await undoCall('fs_undo', { job: 'job-1', call: m.callId, path: 'once.txt', to: 'there.txt' })).input);
  const results = await Promise.all(undos.map((input) => run(input)));
  expect(results.filter((r) => r.ok)).toHaveLength(1);
  expect(readFileSync(join(f.root, 'once.txt'), 'utf8')).toBe('once');
  expect(readFileSync(join(f.root, 'there.txt'), 'utf8')).toBe('there');
  expect(statSync(join(f.root, 'there.txt')).nlink).toBe(1);
});
