import { generateKeyPairSync } from 'node:crypto';
import { execFileSync } from 'node:child_process';
import { appendFileSync, chmodSync, chownSync, existsSync, linkSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ExecuteInput, ExecuteResult } from '../../activities/tool-gate';
import { actionSentence } from '../../core/reviewer/action-sentence';
import { Roots } from '../../host/fs/roots';
import { createFileCapability } from '../../host/tools/file-host';
import { purgeExpiredHolds } from '../../host/tools/holding';
import { approvedCalls } from '../helpers/approved-call';
import { asNobody, gateOver, runAttempt, undoFixture } from '../helpers/undo-root';
import { treeListing } from '../helpers/tree-listing';

/**
 * `fs_undo` through the real gate activities on real folders: a delete in
 * a root set up for undo, then its undo, each approved as a job would run
 * it. What comes back is what went (inode, bytes, mode, mtime of every
 * entry), once; an undo that finds the path taken again, the kept entry
 * changed, its time over, another path named, or another undo first,
 * refuses and changes nothing.
 */
const keys = generateKeyPairSync('ed25519');
const f = undoFixture('airlock-restore-', keys.publicKey);
const DAY = 24 * 3600 * 1000;

const gateWith = (options: { readonly now?: () => number } = {}) => gateOver(f, keys.publicKey, options);

const deleteCall = approvedCalls({ gate: () => f.gate, privateKey: keys.privateKey, jobId: 'job-1' });
const undoCall = approvedCalls({ gate: () => f.gate, privateKey: keys.privateKey, jobId: 'undo-job-1' });
const run = (input: ExecuteInput, attempt = 1): Promise<ExecuteResult> => runAttempt(f.gate, input, attempt);
const held = (nonce: string) => join(f.root, '.airlock-undo', nonce, 'held');

/** What a mode change keeps before its chmod, as a killed attempt leaves it in its call's folder. */
function keptMode(nonce: string, file: string, before: string, after: string): void {
  const s = statSync(file);
  mkdirSync(join(f.root, '.airlock-undo', nonce), { recursive: true });
  writeFileSync(join(f.root, '.airlock-undo', nonce, 'mode.json'), JSON.stringify({ before, after, dev: s.dev, ino: s.ino, born: s.birthtimeMs }));
}

/** Deletes `path` (kept for undo) as an approved call; its call id and nonce. */
async function deleted(path: string, recursive = false) {
  const { prepared, input } = await deleteCall('fs_delete', { path, recursive });
  expect(await run(input)).toMatchObject({ ok: true });
  return { callId: input.callId, nonce: prepared.nonce };
}

test('a file comes back byte for byte with its inode, mode and mtime; the record is marked restored, the holding folder emptied; a second undo refuses', async () => {
  const file = join(f.root, 'taxes 2024.pdf');
  writeFileSync(file, 'pdf bytes');
  chmodSync(file, 0o604);
  utimesSync(file, new Date('2021-03-04'), new Date('2021-03-04'));
  const before = statSync(file);
  const del = await deleted('taxes 2024.pdf');
  expect(existsSync(file)).toBe(false);

  const { prepared, input } = await undoCall('fs_undo', { job: 'job-1', call: del.callId, path: 'taxes 2024.pdf' });
  expect(prepared.warnings).toEqual([]);
  expect(actionSentence({ toolName: 'fs_undo', args: input.args, observed: prepared.observed, target: '' })).toBe(`Undo call ${del.callId} of job job-1: put taxes 2024.pdf in share back as it was before that change`);
  expect(await run(input)).toMatchObject({ ok: true, output: `restored ${realpathSync(f.root)}/taxes 2024.pdf` });

  const now = statSync(file);
  expect({ ino: now.ino, dev: now.dev, mode: now.mode, mtime: now.mtimeMs, nlink: now.nlink }).toEqual({ ino: before.ino, dev: before.dev, mode: before.mode, mtime: before.mtimeMs, nlink: 1 });
  expect(readFileSync(file, 'utf8')).toBe('pdf bytes');
  expect(await f.nonces.undoRecord(del.nonce)).toMatchObject({ state: 'restored', settledAt: expect.any(String) });
  expect(readdirSync(join(f.root, '.airlock-undo'))).toEqual([]);

  const again = await undoCall('fs_undo', { job: 'job-1', call: del.callId, path: 'taxes 2024.pdf' });
  expect(again.prepared.warnings.join('\n')).toMatch(/exists again|already undone/);
  const second = await run(again.input);
  expect(second).toMatchObject({ ok: false });
  expect(readFileSync(file, 'utf8')).toBe('pdf bytes');
});

test('a folder of 1,000 files comes back whole by one rename: every entry keeps its inode, mode, mtime and bytes', async () => {
  const folder = join(f.root, 'photos');
  for (let d = 0; d < 10; d++) {
    mkdirSync(join(folder, `d${d}`), { recursive: true });
    for (let f = 0; f < 100; f++) writeFileSync(join(folder, `d${d}`, `f${f}.jpg`), `photo ${d}/${f}`);
  }
  chmodSync(join(folder, 'd4'), 0o750);
  const before = treeListing(folder);
  const top = statSync(folder);
  const del = await deleted('photos', true);
  const { prepared, input } = await undoCall('fs_undo', { job: 'job-1', call: del.callId, path: join(f.root, 'photos') });
  expect(prepared.warnings).toEqual([]);
  expect(await run(input)).toMatchObject({ ok: true });
  expect(treeListing(folder)).toEqual(before);
  expect(statSync(folder).ino).toBe(top.ino);
  expect(await f.nonces.undoRecords({ jobId: 'job-1', state: 'held', limit: 10 })).toEqual([]);
});

test('the path taken again after the delete: the card says so, the undo refuses, and both the new file and the kept one stay', async () => {
  writeFileSync(join(f.root, 'notes.txt'), 'old notes');
  const del = await deleted('notes.txt');
  writeFileSync(join(f.root, 'notes.txt'), 'new notes');
  const { prepared, input } = await undoCall('fs_undo', { job: 'job-1', call: del.callId, path: 'notes.txt' });
  expect(prepared.warnings.join('\n')).toContain(`${realpathSync(f.root)}/notes.txt exists again (a file made after the change); move or delete it first, then undo again`);
  const result = await run(input);
  expect(result.ok).toBe(false);
  expect(readFileSync(join(f.root, 'notes.txt'), 'utf8')).toBe('new notes');
  expect(readFileSync(held(del.nonce), 'utf8')).toBe('old notes');
  expect(await f.nonces.undoRecord(del.nonce)).toMatchObject({ state: 'held' });
});

test('the kept entry changed since (its content, or a file added in a kept folder): the undo refuses and restores nothing', async () => {
  writeFileSync(join(f.root, 'a.txt'), 'a');
  mkdirSync(join(f.root, 'album'));
  writeFileSync(join(f.root, 'album', 'one.jpg'), '1');
  const file = await deleted('a.txt');
  const folder = await deleted('album', true);
  appendFileSync(held(file.nonce), ' changed');
  writeFileSync(join(held(folder.nonce), 'planted.sh'), 'x');

  for (const [del, path] of [[file, 'a.txt'], [folder, 'album']] as const) {
    const { prepared, input } = await undoCall('fs_undo', { job: 'job-1', call: del.callId, path });
    expect(prepared.warnings.join('\n')).toContain('was changed (its content changed since it was kept); nothing was restored');
    expect((await run(input)).ok).toBe(false);
    expect(existsSync(join(f.root, path))).toBe(false);
    expect(await f.nonces.undoRecord(del.nonce)).toMatchObject({ state: 'held' });
  }
});

test('after its undo time, and after retention purged it, the undo refuses; nothing comes back', async () => {
  writeFileSync(join(f.root, 'old.log'), 'log');
  // Deleted 8 days ago with a 7-day undo time.
  f.gate = await gateWith({ now: () => Date.now() - 8 * DAY });
  const del = await deleted('old.log');
  f.gate = await gateWith();
  const { prepared, input } = await undoCall('fs_undo', { job: 'job-1', call: del.callId, path: 'old.log' });
  expect(prepared.warnings.join('\n')).toMatch(new RegExp(`the undo time of call ${del.callId} of job job-1 ended on .*; what it changed cannot be put back`));
  expect((await run(input)).ok).toBe(false);
  expect(existsSync(join(f.root, 'old.log'))).toBe(false);

  expect(await purgeExpiredHolds(f.undo, f.nonces, Date.now())).toBe(1);
  const after = await undoCall('fs_undo', { job: 'job-1', call: del.callId, path: 'old.log' });
  expect((await run(after.input)).output).toContain('cannot be put back');
  expect(existsSync(join(f.root, 'old.log'))).toBe(false);
});

test('another path than the one the call deleted, or a call that kept nothing: refused, naming why', async () => {
  writeFileSync(join(f.root, 'x.txt'), 'x');
  writeFileSync(join(f.root, 'y.txt'), 'y');
  const del = await deleted('x.txt');
  const other = await undoCall('fs_undo', { job: 'job-1', call: del.callId, path: 'y-restored.txt' });
  expect(other.prepared.warnings.join('\n')).toContain(`y-restored.txt is not the path call ${del.callId} of job job-1 changed; name that path`);
  expect((await run(other.input)).ok).toBe(false);
  expect(existsSync(join(f.root, 'y-restored.txt'))).toBe(false);

  const none = await undoCall('fs_undo', { job: 'job-1', call: 'c-never', path: 'x.txt' });
  expect(none.prepared.warnings.join('\n')).toContain('call c-never of job job-1 kept nothing for undo');
  // A path into the holding folder is refused like any other tool's.
  const inside = await undoCall('fs_undo', { job: 'job-1', call: del.callId, path: `.airlock-undo/${del.nonce}/held` });
  expect((await run(inside.input)).ok).toBe(false);
  expect(readFileSync(held(del.nonce), 'utf8')).toBe('x');
});

test('eight undos of one delete at once, each with its own approval: the file comes back exactly once, and the others refuse', async () => {
  writeFileSync(join(f.root, 'once.txt'), 'once');
  const del = await deleted('once.txt');
  const undos = [];
  for (let i = 0; i < 8; i++) undos.push((await undoCall('fs_undo', { job: 'job-1', call: del.callId, path: 'once.txt' })).input);
  const results = await Promise.all(undos.map((input) => run(input)));
  expect(results.filter((r) => r.ok)).toHaveLength(1);
  expect(readFileSync(join(f.root, 'once.txt'), 'utf8')).toBe('once');
  expect(statSync(join(f.root, 'once.txt')).nlink).toBe(1);
  expect(await f.nonces.undoRecord(del.nonce)).toMatchObject({ state: 'restored' });
});

test('retention purging as an undo runs: whichever settles the record first wins, and the entry is either back or gone, never half', async () => {
  writeFileSync(join(f.root, 'race.txt'), 'race');
  const del = await deleted('race.txt');
  const { input } = await undoCall('fs_undo', { job: 'job-1', call: del.callId, path: 'race.txt' });
  // The purge settles the record first: the undo then finds it ended.
  expect(await f.nonces.settleUndo(del.nonce, 'purged')).toBe(true);
  const result = await run(input);
  expect(result.ok).toBe(false);
  expect(existsSync(join(f.root, 'race.txt'))).toBe(false);
});

test('a file restore a kill cut between its link and its unlink is finished by the next attempt: one name, one record marked', async () => {
  writeFileSync(join(f.root, 'cut.txt'), 'cut');
  const del = await deleted('cut.txt');
  // What the killed attempt left: the file under both names.
  linkSync(held(del.nonce), join(f.root, 'cut.txt'));
  const files = createFileCapability(await Roots.create([f.root]), { undo: f.undo, undoRecords: f.nonces });
  expect(await files.restored({ job: 'job-1', call: del.callId, path: 'cut.txt' }, { pathWasFree: true })).toEqual({ present: true, detail: `${realpathSync(f.root)}/cut.txt is back as it was before call ${del.callId} of job job-1` });
  expect(statSync(join(f.root, 'cut.txt')).nlink).toBe(1);
  expect(existsSync(held(del.nonce))).toBe(false);
  expect(await f.nonces.undoRecord(del.nonce)).toMatchObject({ state: 'restored' });
});

test('a folder restore a kill cut between its rename and its record: the next attempt finds it back and marks the record, moving nothing', async () => {
  mkdirSync(join(f.root, 'docs'));
  writeFileSync(join(f.root, 'docs', 'a.md'), 'a');
  const del = await deleted('docs', true);
  const before = treeListing(held(del.nonce));
  renameSync(held(del.nonce), join(f.root, 'docs'));
  const files = createFileCapability(await Roots.create([f.root]), { undo: f.undo, undoRecords: f.nonces });
  expect(await files.restored({ job: 'job-1', call: del.callId, path: 'docs' }, { pathWasFree: true })).toMatchObject({ present: true });
  expect(treeListing(join(f.root, 'docs'))).toEqual(before);
  expect(await f.nonces.undoRecord(del.nonce)).toMatchObject({ state: 'restored' });
  expect(readdirSync(join(f.root, '.airlock-undo'))).toEqual([]);
});

test('the entry kept for undo gone, and a folder made again at the path: never taken for an interrupted restore; the undo refuses and the record stays held', async () => {
  mkdirSync(join(f.root, 'build'));
  writeFileSync(join(f.root, 'build', 'old.o'), 'old');
  const del = await deleted('build', true);
  rmSync(join(f.root, '.airlock-undo', del.nonce), { recursive: true });
  mkdirSync(join(f.root, 'build'));
  writeFileSync(join(f.root, 'build', 'new.o'), 'new');
  const { input } = await undoCall('fs_undo', { job: 'job-1', call: del.callId, path: 'build' });
  expect((await run(input)).ok).toBe(false);
  const files = createFileCapability(await Roots.create([f.root]), { undo: f.undo, undoRecords: f.nonces });
  expect(await files.restored({ job: 'job-1', call: del.callId, path: 'build' }, { pathWasFree: true })).toMatchObject({ present: false });
  expect(readFileSync(join(f.root, 'build', 'new.o'), 'utf8')).toBe('new');
  expect(await f.nonces.undoRecord(del.nonce)).toMatchObject({ state: 'held' });
});

describe('a mode change', () => {
  const modeOf = (path: string) => (statSync(path).mode & 0o7777).toString(8);

  async function chmodded(path: string, mode: string) {
    const { prepared, input } = await deleteCall('fs_chmod', { path, mode });
    expect(prepared.undo).toEqual({ reversible: true, keepDays: 7 });
    expect(actionSentence({ toolName: 'fs_chmod', args: input.args, observed: prepared.observed, target: '', undo: prepared.undo })).toMatch(/— reversible for 7 days \(airlock undo\)$/);
    expect(await run(input)).toMatchObject({ ok: true, output: expect.stringContaining('the mode before is kept for 7 days') });
    return { callId: input.callId, nonce: prepared.nonce };
  }

  test('is taken back on the same inode: the mode it replaced comes back, the record is marked, its folder goes; a second undo refuses', async () => {
    const file = join(f.root, 'private.key');
    writeFileSync(file, 'key');
    chmodSync(file, 0o600);
    const ino = statSync(file).ino;
    const change = await chmodded('private.key', '644');
    expect(modeOf(file)).toBe('644');
    expect(await f.nonces.undoRecord(change.nonce)).toMatchObject({ state: 'held', held: { mode: '600' }, change: { kind: 'mode', after: '644', ino } });
    expect(await f.nonces.heldBytes(realpathSync(f.root))).toBe(0);

    const { prepared, input } = await undoCall('fs_undo', { job: 'job-1', call: change.callId, path: 'private.key' });
    expect(prepared.warnings).toEqual([]);
    expect(await run(input)).toMatchObject({ ok: true, output: `put the mode of ${realpathSync(f.root)}/private.key back to 600` });
    expect(modeOf(file)).toBe('600');
    expect(statSync(file).ino).toBe(ino);
    expect(await f.nonces.undoRecord(change.nonce)).toMatchObject({ state: 'restored' });
    expect(readdirSync(join(f.root, '.airlock-undo'))).toEqual([]);
    const again = await undoCall('fs_undo', { job: 'job-1', call: change.callId, path: 'private.key' });
    expect(again.prepared.warnings.join('\n')).toContain('was already undone');
    expect((await run(again.input)).ok).toBe(false);
  });

  test('changed again since, or the file replaced by another: refused, naming what changed; nothing is changed', async () => {
    const file = join(f.root, 'a.sh');
    writeFileSync(file, 'echo');
    chmodSync(file, 0o700);
    const first = await chmodded('a.sh', '755');
    chmodSync(file, 0o711);
    const later = await undoCall('fs_undo', { job: 'job-1', call: first.callId, path: 'a.sh' });
    expect(later.prepared.warnings.join('\n')).toContain(`the mode of ${realpathSync(f.root)}/a.sh is 711 now, not the 755 call ${first.callId} of job job-1 set (changed again since)`);
    expect((await run(later.input)).ok).toBe(false);
    expect(modeOf(file)).toBe('711');

    const b = join(f.root, 'b.sh');
    writeFileSync(b, 'echo');
    const second = await chmodded('b.sh', '700');
    rmSync(b);
    writeFileSync(b, 'another');
    chmodSync(b, 0o700);
    const replaced = await undoCall('fs_undo', { job: 'job-1', call: second.callId, path: 'b.sh' });
    expect(replaced.prepared.warnings.join('\n')).toMatch(/is another file than the one call .* changed \(replaced since\)|its mode was not changed/);
    expect((await run(replaced.input)).ok).toBe(false);
    expect(modeOf(b)).toBe('700');
  });

  test('set-id bits go back only onto the content they were on', async () => {
    for (const [name, write] of [['same', false], ['written', true]] as const) {
      const file = join(f.root, name);
      writeFileSync(file, '#!/bin/sh');
      chmodSync(file, 0o4755);
      const change = await chmodded(name, '755');
      expect(modeOf(file)).toBe('755');
      if (write) appendFileSync(file, '\nrm -rf /');
      const { input } = await undoCall('fs_undo', { job: 'job-1', call: change.callId, path: name });
      const result = await run(input);
      expect(result.ok).toBe(true);
      expect(modeOf(file)).toBe(write ? '755' : '4755');
      if (write) expect(result.output).toContain('not its set-id or sticky bits: its content changed since');
    }
  });

  test('killed after the mode was set and before its record: the retry settles the call as run and writes the record, once', async () => {
    const file = join(f.root, 'c.txt');
    writeFileSync(file, 'c');
    chmodSync(file, 0o640);
    const { prepared, input } = await deleteCall('fs_chmod', { path: 'c.txt', mode: '600' });
    await f.nonces.consume({ nonce: prepared.nonce, jobId: 'job-1', callId: input.callId, fingerprint: input.grant.claims.fingerprint, before: prepared.observed });
    // What the killed attempt did: kept what it would set, then set it.
    keptMode(prepared.nonce, file, '640', '600');
    chmodSync(file, 0o600);
    expect(await run(input, 2)).toMatchObject({ ok: true, reconciled: 'ran_before' });
    expect(await f.nonces.undoRecord(prepared.nonce)).toMatchObject({ state: 'held', held: { mode: '640' }, change: { kind: 'mode', after: '600' } });
    const { input: undoing } = await undoCall('fs_undo', { job: 'job-1', call: input.callId, path: 'c.txt' });
    expect(await run(undoing)).toMatchObject({ ok: true });
    expect(modeOf(file)).toBe('640');
  });
});

test("another user's file, which a worker running as an ordinary user may not link back (protected_hardlinks), is put back by a rename", () => {
  // The worker as an ordinary user (nobody) owns the root; the file is root's, readable, not writable by it.
  const share = join(f.dir, 'nobody-share');
  mkdirSync(share);
  chownSync(share, 65534, 65534);
  chownSync(f.dir, 0, 0);
  chmodSync(f.dir, 0o755);
  writeFileSync(join(share, 'report.txt'), 'quarterly');
  chmodSync(join(share, 'report.txt'), 0o644);
  const ino = statSync(join(share, 'report.txt')).ino;
  const answer = asNobody(f.dir, share, `
    const before = await files.observe('report.txt', { follow: false, deep: true });
    const nonce = 'ab'.repeat(16);
    answer.removed = await files.remove('report.txt', false, { key: nonce, required: true, bytes: before.size });
    await store.recordUndo({ schemaVersion: 1, nonce, jobId: 'j', callId: 'c', toolName: 'fs_delete', root, pathDigest: pathDigest(before.path),
      held: { type: 'file', bytes: before.size, files: null, digest: before.sha256, mode: before.mode, dev: before.dev, ino: before.ino },
      heldAt: new Date().toISOString(), expiresAt: new Date(Date.now() + 864e5).toISOString(), state: 'held' });
    answer.restored = await files.restore({ job: 'j', call: 'c', path: 'report.txt' });
    answer.state = (await store.undoRecord(nonce)).state;`);
  expect(answer).toMatchObject({ removed: { ok: true }, restored: { ok: true, output: `restored ${realpathSync(share)}/report.txt` }, state: 'restored' });
  expect(readFileSync(join(share, 'report.txt'), 'utf8')).toBe('quarterly');
  expect(statSync(join(share, 'report.txt')).ino).toBe(ino);
  expect(existsSync(join(share, '.airlock-undo', 'ab'.repeat(16), 'held'))).toBe(false);
});

describe('a mode change cut short', () => {
  test('killed after keeping its mode and before the chmod: the retry runs it now, once, and records it; the undo puts the mode back', async () => {
    const file = join(f.root, 'd.txt');
    writeFileSync(file, 'd');
    chmodSync(file, 0o640);
    const { prepared, input } = await deleteCall('fs_chmod', { path: 'd.txt', mode: '604' });
    await f.nonces.consume({ nonce: prepared.nonce, jobId: 'job-1', callId: input.callId, fingerprint: input.grant.claims.fingerprint, before: prepared.observed });
    keptMode(prepared.nonce, file, '640', '604');
    expect(await run(input, 2)).toMatchObject({ ok: true, reconciled: 'ran_now' });
    expect((statSync(file).mode & 0o777).toString(8)).toBe('604');
    expect(await f.nonces.undoRecord(prepared.nonce)).toMatchObject({ state: 'held', held: { mode: '640' }, change: { kind: 'mode', after: '604' } });
  });

  test('a chmod that fails keeps nothing: no record, nothing to undo', async () => {
    const file = join(f.root, 'fixed.txt');
    writeFileSync(file, 'f');
    chmodSync(file, 0o644);
    const { prepared, input } = await deleteCall('fs_chmod', { path: 'fixed.txt', mode: '600' });
    // Immutable: even root's chmod fails (EPERM).
    execFileSync('chattr', ['+i', file]);
    try {
      const result = await run(input);
      expect(result).toMatchObject({ ok: false });
      expect((statSync(file).mode & 0o777).toString(8)).toBe('644');
      expect(await f.nonces.undoRecord(prepared.nonce)).toBeUndefined();
      expect(existsSync(join(f.root, '.airlock-undo', prepared.nonce, 'mode.json'))).toBe(false);
    } finally {
      execFileSync('chattr', ['-i', file]);
    }
  });
});
