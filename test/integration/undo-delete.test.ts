import { createHash, generateKeyPairSync } from 'node:crypto';
import { chmodSync, existsSync, symlinkSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, renameSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createToolGateActivities, type ExecuteInput, type ExecuteResult } from '../../activities/tool-gate';
import { approvedCalls } from '../helpers/approved-call';
import { createGrantVerifier } from '../../host/keys/grant-keys';
import { pathDigest } from '../../host/stores/nonces/store';
import { SqliteNonceStore } from '../../host/stores/nonces/sqlite';
import { Roots } from '../../host/fs/roots';
import { purgeExpiredHolds } from '../../host/tools/holding';
import { type UndoSettings } from '../../host/tools/undo-settings';
import { treeListing } from '../helpers/tree-listing';

/**
 * A delete in a root set up for undo, through the real gate activities on
 * real folders: the card is told before approval, the entry is moved whole
 * into the root's holding folder (same inode, bytes and mode), the record
 * is in the store (the path only as its digest), a crash between the move
 * and the record is settled with the record written, and retention purges
 * what is past its time.
 */
let dir: string;
let root: string;
let plain: string;
let nonces: SqliteNonceStore;
const keys = generateKeyPairSync('ed25519');
const DAY = 24 * 3600 * 1000;

async function gateWith(undo: UndoSettings | undefined) {
  const roots = await Roots.create([root, plain]);
  return createToolGateActivities({ roots, nonces, verifier: createGrantVerifier(keys.publicKey), claimStaleMs: 0, ...(undo !== undefined ? { undo } : {}) });
}

let gate: Awaited<ReturnType<typeof gateWith>>;
let undo: UndoSettings;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-undo-'));
  root = join(dir, 'kept');
  plain = join(dir, 'plain');
  mkdirSync(root);
  mkdirSync(plain);
  nonces = new SqliteNonceStore(join(dir, 'tools', 'nonces.sqlite'));
  undo = { roots: [realpathSync(root)], keepDays: 7 };
  gate = await gateWith(undo);
});
afterEach(async () => {
  await nonces.close();
  rmSync(dir, { recursive: true, force: true });
});

const calls = approvedCalls({ gate: () => gate, privateKey: keys.privateKey });
/** An approved delete as `execute` receives it, with what its card said of undo (the job's defaults filled in, as the grant binds them). */
const approvedCall = (given: Record<string, unknown>) => calls('fs_delete', { recursive: false, ...given });

const run = (input: ExecuteInput, attempt = 1): Promise<ExecuteResult> => new MockActivityEnvironment({ attempt }).run(gate.execute, input);
const held = (nonce: string) => join(root, '.airlock-undo', nonce, 'held');


test('a file: the card says reversible for 7 days; the delete moves it whole into the holding folder and stores its record with the path as a digest', async () => {
  const file = join(root, 'token=abc.txt');
  writeFileSync(file, 'secret bytes');
  chmodSync(file, 0o640);
  const before = statSync(file);
  const { prepared, input } = await approvedCall({ path: 'token=abc.txt' });
  expect(prepared.undo).toEqual({ reversible: true, keepDays: 7 });

  const result = await run(input);
  expect(result).toMatchObject({ ok: true, replayed: false });
  expect(result.output).toBe(`deleted ${realpathSync(root)}/token=abc.txt (kept for 7 days: airlock undo restores it)`);
  expect(existsSync(file)).toBe(false);
  const kept = statSync(held(prepared.nonce));
  expect({ ino: kept.ino, dev: kept.dev, mode: kept.mode, mtime: kept.mtimeMs }).toEqual({ ino: before.ino, dev: before.dev, mode: before.mode, mtime: before.mtimeMs });
  expect(readFileSync(held(prepared.nonce), 'utf8')).toBe('secret bytes');
  expect(statSync(join(root, '.airlock-undo')).mode & 0o777).toBe(0o700);

  const record = await nonces.undoRecord(prepared.nonce);
  expect(record).toMatchObject({
    schemaVersion: 1,
    nonce: prepared.nonce,
    jobId: 'job-1',
    callId: input.callId,
    toolName: 'fs_delete',
    root: realpathSync(root),
    pathDigest: pathDigest(`${realpathSync(root)}/token=abc.txt`),
    held: { type: 'file', bytes: 12, files: null, digest: createHash('sha256').update('secret bytes').digest('hex'), mode: '640' },
    state: 'held',
  });
  const expires = Date.parse(record?.expiresAt ?? '') - Date.parse(record?.heldAt ?? '');
  expect(expires).toBe(7 * DAY);
  expect(JSON.stringify(record)).not.toContain('token=abc');
  // A retry of the same grant reports the earlier run; nothing is held twice.
  expect(await run(input, 2)).toMatchObject({ ok: true, replayed: true });
  expect(readdirSync(join(root, '.airlock-undo'))).toEqual([prepared.nonce]);
});

test('a folder of 1,000 files is held by one rename: every entry below keeps its inode, mode, mtime and bytes', async () => {
  const folder = join(root, 'photos');
  for (let d = 0; d < 10; d++) {
    mkdirSync(join(folder, `d${d}`), { recursive: true });
    for (let f = 0; f < 100; f++) writeFileSync(join(folder, `d${d}`, `f${f}.jpg`), `photo ${d}/${f}`);
  }
  utimesSync(join(folder, 'd3', 'f7.jpg'), new Date('2020-01-01'), new Date('2020-01-01'));
  const before = treeListing(folder);
  const { prepared, input } = await approvedCall({ path: 'photos', recursive: true });
  expect(prepared.undo).toEqual({ reversible: true, keepDays: 7 });
  expect(await run(input)).toMatchObject({ ok: true });
  expect(existsSync(folder)).toBe(false);
  expect(treeListing(held(prepared.nonce))).toEqual(before);
  expect((await nonces.undoRecord(prepared.nonce))?.held).toMatchObject({ type: 'directory', files: 1000, bytes: before.reduce((n, line) => n + (line.includes(' f ') ? Number(line.split(' ')[2]) : 0), 0) });
});

test('a folder that is not empty, without recursive, is refused as before: nothing is moved', async () => {
  mkdirSync(join(root, 'full'));
  writeFileSync(join(root, 'full', 'x'), 'x');
  const { input, prepared } = await approvedCall({ path: 'full' });
  const result = await run(input);
  expect(result).toMatchObject({ ok: false });
  expect(result.output).toMatch(/^Error: directory not empty: .*full \(set recursive to delete it with its contents\)$/);
  expect(readFileSync(join(root, 'full', 'x'), 'utf8')).toBe('x');
  expect(existsSync(join(root, '.airlock-undo', prepared.nonce, 'held'))).toBe(false);
  expect(await nonces.undoRecord(prepared.nonce)).toBeUndefined();
});

test('a root not set up for undo: the card says nothing can be undone, and the delete is for good', async () => {
  writeFileSync(join(plain, 'gone.txt'), 'x');
  const { prepared, input } = await approvedCall({ path: join(plain, 'gone.txt') });
  expect(prepared.undo).toEqual({ reversible: false, why: `${realpathSync(plain)} is not set up for undo` });
  expect(await run(input)).toMatchObject({ ok: true, output: `deleted ${realpathSync(plain)}/gone.txt` });
  expect(existsSync(join(plain, 'gone.txt'))).toBe(false);
  expect(existsSync(join(plain, '.airlock-undo'))).toBe(false);
  expect(await nonces.undoRecord(prepared.nonce)).toBeUndefined();
});

test('a rule chose the delete not reversible (its card said so): in a root set up for undo it is deleted for good, keeping nothing', async () => {
  writeFileSync(join(root, 'big.iso'), 'x'.repeat(1000));
  const { prepared, input } = await approvedCall({ path: 'big.iso' });
  expect(prepared.undo).toEqual({ reversible: true, keepDays: 7 });
  // What the job hands over when a gating rule said `reversible: false`.
  const { reversible: _promised, ...approved } = input.approved ?? { originalTargets: [], allowedTools: [], reviewer: 'alice', reviewers: null, separateRequester: false, requester: 'tester', observed: [] };
  expect(await run({ ...input, approved: { ...approved, keep: false } })).toMatchObject({ ok: true, output: `deleted ${realpathSync(root)}/big.iso` });
  expect(existsSync(join(root, 'big.iso'))).toBe(false);
  expect(existsSync(join(root, '.airlock-undo', prepared.nonce))).toBe(false);
  expect(await nonces.undoRecord(prepared.nonce)).toBeUndefined();
});

test('approved as reversible, then undo was turned off for the root: the call is refused and nothing is deleted', async () => {
  writeFileSync(join(root, 'keep.txt'), 'x');
  const { input } = await approvedCall({ path: 'keep.txt' });
  gate = await gateWith(undefined);
  const result = await run(input);
  expect(result).toMatchObject({ ok: false });
  expect(result.output).toBe(`Refused: the approved change was to be reversible, but ${realpathSync(root)} is not set up for undo; nothing was changed`);
  expect(readFileSync(join(root, 'keep.txt'), 'utf8')).toBe('x');
});

test('killed after the move and before the record: the retry finds the held entry by its nonce, settles the call as run, and writes the record once', async () => {
  writeFileSync(join(root, 'a.txt'), 'content');
  const { prepared, input } = await approvedCall({ path: 'a.txt' });
  // The attempt that died: it consumed the nonce with the target as approved, and moved the entry aside.
  expect(await nonces.consume({ nonce: prepared.nonce, jobId: 'job-1', callId: input.callId, fingerprint: input.grant.claims.fingerprint, before: prepared.observed })).toEqual({ consumed: true });
  mkdirSync(join(root, '.airlock-undo', prepared.nonce), { recursive: true });
  renameSync(join(root, 'a.txt'), held(prepared.nonce));

  const result = await run(input, 2);
  expect(result).toMatchObject({ ok: true, replayed: true, reconciled: 'ran_before' });
  expect(await nonces.undoRecord(prepared.nonce)).toMatchObject({ state: 'held', held: { type: 'file', bytes: 7 }, pathDigest: pathDigest(`${realpathSync(root)}/a.txt`) });
  expect(await nonces.undoRecords({ jobId: 'job-1', limit: 10 })).toHaveLength(1);
});

test('killed after consuming and before the move: the retry moves it now, once, and records it', async () => {
  writeFileSync(join(root, 'b.txt'), 'bee');
  const { prepared, input } = await approvedCall({ path: 'b.txt' });
  await nonces.consume({ nonce: prepared.nonce, jobId: 'job-1', callId: input.callId, fingerprint: input.grant.claims.fingerprint, before: prepared.observed });
  // It had created its folder in the holding folder when it died.
  mkdirSync(join(root, '.airlock-undo', prepared.nonce), { recursive: true });

  expect(await run(input, 2)).toMatchObject({ ok: true, reconciled: 'ran_now' });
  expect(readFileSync(held(prepared.nonce), 'utf8')).toBe('bee');
  expect(await nonces.undoRecord(prepared.nonce)).toMatchObject({ state: 'held' });
});

test('retention purges what is past its undo time, and only that; an entry a crash left without its record is kept its full time too', async () => {
  writeFileSync(join(root, 'old.txt'), 'old');
  writeFileSync(join(root, 'new.txt'), 'new');
  const old = await approvedCall({ path: 'old.txt' });
  await run(old.input);
  // Kept 30 days: still held when the 7-day one is past its time.
  gate = await gateWith({ ...undo, keepDays: 30 });
  const fresh = await approvedCall({ path: 'new.txt' });
  await run(fresh.input);
  // A crash's leftover: a call's folder with no record.
  const stray = 'f'.repeat(32);
  mkdirSync(join(root, '.airlock-undo', stray, 'held'), { recursive: true });

  expect(await purgeExpiredHolds(undo, nonces, Date.now())).toBe(0);
  expect(existsSync(held(old.prepared.nonce))).toBe(true);
  expect(existsSync(join(root, '.airlock-undo', stray))).toBe(true);
  // Without its record an entry is still kept its full undo time (counted from when it was moved in), not an hour.
  expect(await purgeExpiredHolds(undo, nonces, Date.now() + 2 * 3600 * 1000)).toBe(0);
  expect(existsSync(join(root, '.airlock-undo', stray, 'held'))).toBe(true);

  expect(await purgeExpiredHolds(undo, nonces, Date.now() + 8 * DAY)).toBe(1);
  expect(await nonces.undoRecord(old.prepared.nonce)).toMatchObject({ state: 'purged' });
  expect(existsSync(join(root, '.airlock-undo', old.prepared.nonce))).toBe(false);
  expect(existsSync(join(root, '.airlock-undo', stray))).toBe(false);
  expect(await nonces.undoRecord(fresh.prepared.nonce)).toMatchObject({ state: 'held' });
  expect(readFileSync(held(fresh.prepared.nonce), 'utf8')).toBe('new');
  // Another machine's roots are not this worker's to purge.
  expect(await purgeExpiredHolds({ roots: ['/elsewhere'], keepDays: 7 }, nonces, Date.now() + 60 * DAY)).toBe(0);
  expect(await nonces.undoRecord(fresh.prepared.nonce)).toMatchObject({ state: 'held' });
});

test('retention never follows a link planted in place of the holding folder', async () => {
  const outside = join(dir, 'outside');
  const victim = join(outside, 'a'.repeat(32));
  mkdirSync(join(victim, 'held'), { recursive: true });
  writeFileSync(join(victim, 'held', 'data'), 'not airlock\'s');
  symlinkSync(outside, join(root, '.airlock-undo'));
  expect(await purgeExpiredHolds(undo, nonces, Date.now() + 365 * DAY)).toBe(0);
  expect(readFileSync(join(victim, 'held', 'data'), 'utf8')).toBe("not airlock's");
  // And a delete does not hold into it: the link is refused, nothing is deleted.
  writeFileSync(join(root, 'x.txt'), 'x');
  const { input } = await approvedCall({ path: 'x.txt' });
  expect(await run(input)).toMatchObject({ ok: false });
  expect(readFileSync(join(root, 'x.txt'), 'utf8')).toBe('x');
  expect(readdirSync(outside)).toEqual(['a'.repeat(32)]);
});

test('killed after the move, and the name taken again before the retry: the outcome is unknown, yet the held entry gets its record', async () => {
  writeFileSync(join(root, 'c.txt'), 'first');
  const { prepared, input } = await approvedCall({ path: 'c.txt' });
  await nonces.consume({ nonce: prepared.nonce, jobId: 'job-1', callId: input.callId, fingerprint: input.grant.claims.fingerprint, before: prepared.observed });
  mkdirSync(join(root, '.airlock-undo', prepared.nonce), { recursive: true });
  renameSync(join(root, 'c.txt'), held(prepared.nonce));
  writeFileSync(join(root, 'c.txt'), 'someone else');

  expect(await run(input, 2)).toMatchObject({ ok: false, reconciled: 'unknown' });
  expect(readFileSync(join(root, 'c.txt'), 'utf8')).toBe('someone else');
  expect(readFileSync(held(prepared.nonce), 'utf8')).toBe('first');
  expect(await nonces.undoRecord(prepared.nonce)).toMatchObject({ state: 'held', held: { type: 'file', bytes: 5 } });
});

test("the root's quota: a delete that would pass it is not kept (its card says cannot be undone, and why) and deletes for good; an undo frees its share", async () => {
  undo = { ...undo, quota: { bytes: 30 } };
  gate = await gateWith(undo);
  for (const name of ['a.bin', 'b.bin', 'c.bin']) writeFileSync(join(root, name), 'x'.repeat(20));
  const a = await approvedCall({ path: 'a.bin' });
  expect(a.prepared.undo).toEqual({ reversible: true, keepDays: 7 });
  await run(a.input);
  expect(existsSync(held(a.prepared.nonce))).toBe(true);

  const b = await approvedCall({ path: 'b.bin' });
  expect(b.prepared.undo).toEqual({ reversible: false, why: `keeping 20 bytes more would pass ${realpathSync(root)}'s undo quota (20 bytes kept of 30 bytes)` });
  expect(await run(b.input)).toMatchObject({ ok: true, output: `deleted ${realpathSync(root)}/b.bin` });
  expect(existsSync(held(b.prepared.nonce))).toBe(false);
  expect(await nonces.undoRecord(b.prepared.nonce)).toBeUndefined();

  // What is no longer held counts no more.
  expect(await nonces.settleUndo(a.prepared.nonce, 'restored')).toBe(true);
  expect((await approvedCall({ path: 'c.bin' })).prepared.undo).toEqual({ reversible: true, keepDays: 7 });
});

test('a delete promised reversible is kept even when others filled the quota since its card; one no card promised is then deleted for good', async () => {
  undo = { ...undo, quota: { bytes: 30 } };
  gate = await gateWith(undo);
  for (const name of ['x.bin', 'y.bin']) writeFileSync(join(root, name), 'x'.repeat(20));
  writeFileSync(join(root, 'z.bin'), 'zzzzz');
  const x = await approvedCall({ path: 'x.bin' });
  const y = await approvedCall({ path: 'y.bin' });
  expect([x.prepared.undo, y.prepared.undo]).toEqual([{ reversible: true, keepDays: 7 }, { reversible: true, keepDays: 7 }]);
  await run(y.input);
  expect(await run(x.input)).toMatchObject({ ok: true, output: expect.stringContaining('kept for 7 days') });
  expect(await nonces.heldBytes(realpathSync(root))).toBe(40);

  // An allowed delete (no card, no promise): past the quota, it is not kept.
  const { prepared, input } = await approvedCall({ path: 'z.bin' });
  const { approved: _approved, ...allowed } = input;
  expect(await run(allowed)).toMatchObject({ ok: true, output: `deleted ${realpathSync(root)}/z.bin` });
  expect(existsSync(held(prepared.nonce))).toBe(false);
});

test('a folder past the tree limits, deleted without a card (a rule let it run): not kept on an unknown size, and refused as without undo', async () => {
  const roots = await Roots.create([root, plain]);
  gate = createToolGateActivities({ roots, nonces, verifier: createGrantVerifier(keys.publicKey), claimStaleMs: 0, undo, treeLimits: { entries: 5, depth: 10 } });
  mkdirSync(join(root, 'many'));
  for (let i = 0; i < 30; i++) writeFileSync(join(root, 'many', `f${i}`), 'x');
  const { prepared, input } = await approvedCall({ path: 'many', recursive: true });
  const { approved: _approved, ...allowed } = input;
  const result = await run(allowed);
  expect(result.ok).toBe(false);
  expect(readdirSync(join(root, 'many'))).toHaveLength(30);
  expect(existsSync(held(prepared.nonce))).toBe(false);
});
