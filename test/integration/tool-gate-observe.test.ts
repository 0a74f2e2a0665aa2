import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, renameSync, rmSync, symlinkSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createToolGateActivities, type ApprovedCheck, type RevalidateInput } from '../../activities/tool-gate';
import { callFingerprint } from '../../core/approval/fingerprint';
import { isFileState, type ObservedState } from '../../core/tools/observed-state';
import { createGrantSigner, createGrantVerifier } from '../../host/keys/grant-keys';
import { SqliteNonceStore } from '../../host/stores/nonces/sqlite';
import { Roots } from '../../host/fs/roots';
import { MAX_TREE_DEPTH } from '../../host/tools/tree';

/** prepare and revalidate, the real activity functions, on real folders (no Temporal needed to call them). */
let dir: string;
let root: string;
let nonces: SqliteNonceStore;
let gate: ReturnType<typeof createToolGateActivities>;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-gate-'));
  root = join(dir, 'root');
  mkdirSync(root);
  nonces = new SqliteNonceStore(join(dir, 'nonces.sqlite'));
  gate = createToolGateActivities({
    roots: await Roots.create([root]),
    nonces,
    verifier: createGrantVerifier(generateKeyPairSync('ed25519').publicKey),
    treeLimits: { entries: 10, depth: MAX_TREE_DEPTH },
  });
});
afterEach(async () => {
  await nonces.close();
  rmSync(dir, { recursive: true, force: true });
});

function revalidateInput(toolName: string, args: Record<string, unknown>, observed: readonly ObservedState[]): RevalidateInput {
  return { toolName, args, originalArgs: args, allowedTools: [toolName], reviewer: 'alice', reviewers: null, separateRequester: false, requester: 'tester', observed };
}

test('a folder past the entry limit is a warning at prepare and is refused at revalidation, even unchanged', async () => {
  mkdirSync(join(root, 'big'));
  for (let i = 0; i < 11; i++) writeFileSync(join(root, 'big', `f${i}`), 'x');
  const args = { path: join(root, 'big'), recursive: true };
  const prepared = await gate.prepareApproval({ toolName: 'fs_delete', args });
  expect(prepared.observed[0]).toMatchObject({ exists: true, type: 'directory', tree: { complete: false } });
  expect(prepared.warnings).toEqual([expect.stringMatching(/^the tool will refuse this call: .*big holds more than 10 entries below it, too many to observe exactly/)]);
  const check = await gate.revalidate(revalidateInput('fs_delete', args, prepared.observed));
  expect(check).toEqual({ ok: false, reason: expect.stringMatching(/cannot be compared: .*more than 10 entries/) });
});

test(`a folder nested deeper than ${MAX_TREE_DEPTH} levels cannot be approved to run`, async () => {
  const chain = Array.from({ length: MAX_TREE_DEPTH + 1 }, () => 'd');
  mkdirSync(join(root, 'tall', ...chain), { recursive: true });
  const args = { path: 'tall', recursive: true };
  // The default limits: only the depth limit matters here.
  gate = createToolGateActivities({ roots: await Roots.create([root]), nonces, verifier: createGrantVerifier(generateKeyPairSync('ed25519').publicKey) });
  const prepared = await gate.prepareApproval({ toolName: 'fs_delete', args });
  expect(prepared.warnings).toEqual([expect.stringMatching(new RegExp(`tall has folders nested more than ${MAX_TREE_DEPTH} deep`))]);
  expect((await gate.revalidate(revalidateInput('fs_delete', args, prepared.observed))).ok).toBe(false);
  // One level less is observed exactly, and an unchanged tree revalidates.
  rmSync(join(root, 'tall', ...chain), { recursive: true });
  const fits = await gate.prepareApproval({ toolName: 'fs_delete', args });
  expect(fits.warnings).toEqual([]);
  expect(fits.observed[0]).toMatchObject({ tree: { complete: true, entries: MAX_TREE_DEPTH } });
  expect(await gate.revalidate(revalidateInput('fs_delete', args, fits.observed))).toEqual({ ok: true });
});

test('an old-style folder state (recorded before tree digests) still compares, shallowly', async () => {
  mkdirSync(join(root, 'cache', 'sub'), { recursive: true });
  writeFileSync(join(root, 'cache', 'a.txt'), 'a');
  writeFileSync(join(root, 'stray.txt'), 'stray');
  const args = { path: 'cache', recursive: true };
  const prepared = await gate.prepareApproval({ toolName: 'fs_delete', args });
  const seen = prepared.observed[0];
  if (seen === undefined || !isFileState(seen) || !seen.exists) throw new Error('cache was not observed');
  const { tree: _tree, ...oldStyle } = seen;
  expect(await gate.revalidate(revalidateInput('fs_delete', args, [oldStyle]))).toEqual({ ok: true });
  // What the old check could see: its own entries.
  writeFileSync(join(root, 'cache', 'b.txt'), 'b');
  expect(await gate.revalidate(revalidateInput('fs_delete', args, [oldStyle]))).toEqual({
    ok: false,
    reason: `the target changed since it was approved: ${join(root, 'cache')}: entries 2 → 3`,
  });
  // The same change against the new state is described from below.
  unlinkSync(join(root, 'cache', 'b.txt'));
  renameSync(join(root, 'stray.txt'), join(root, 'cache', 'sub', 'stray.txt'));
  expect(await gate.revalidate(revalidateInput('fs_delete', args, prepared.observed))).toEqual({
    ok: false,
    reason: `the target changed since it was approved: ${join(root, 'cache')}: 1 entry added below (entries 2 → 3, 1 → 6 bytes)`,
  });
});

test('a file replaced by a symbolic link after approval is refused as such, and a link is a warning at prepare', async () => {
  writeFileSync(join(root, 'notes.txt'), 'notes');
  writeFileSync(join(root, 'other.txt'), 'other');
  const args = { path: 'notes.txt', recursive: false };
  const prepared = await gate.prepareApproval({ toolName: 'fs_delete', args });
  expect(prepared.warnings).toEqual([]);
  unlinkSync(join(root, 'notes.txt'));
  symlinkSync(join(root, 'other.txt'), join(root, 'notes.txt'));
  expect(await gate.revalidate(revalidateInput('fs_delete', args, prepared.observed))).toEqual({
    ok: false,
    reason: `the target changed since it was approved: ${join(root, 'notes.txt')}: the file was replaced by a symbolic link`,
  });
  const onLink = await gate.prepareApproval({ toolName: 'fs_delete', args });
  expect(onLink.warnings).toEqual(['the tool will refuse this call: notes.txt is a symbolic link; the tool refuses to act on a link']);
});

test('a folder on the way that becomes a link out of the roots is named as the reason', async () => {
  const outside = join(dir, 'outside');
  mkdirSync(join(outside, 'sub'), { recursive: true });
  mkdirSync(join(root, 'media', 'sub'), { recursive: true });
  writeFileSync(join(root, 'media', 'sub', 'film.mkv'), 'film');
  writeFileSync(join(outside, 'sub', 'film.mkv'), 'film');
  const args = { path: 'media/sub/film.mkv', recursive: false };
  const prepared = await gate.prepareApproval({ toolName: 'fs_delete', args });
  rmSync(join(root, 'media'), { recursive: true });
  symlinkSync(outside, join(root, 'media'));
  expect(await gate.revalidate(revalidateInput('fs_delete', args, prepared.observed))).toEqual({
    ok: false,
    reason: 'the target changed since it was approved: media/sub/film.mkv leads outside the allowed roots through a symbolic link',
  });
});

test('an approved call is checked again inside its execute attempt: a changed target is refused with nothing spent, a retry after it ran reports it', async () => {
  const keys = generateKeyPairSync('ed25519');
  const signer = createGrantSigner(keys.privateKey);
  gate = createToolGateActivities({ roots: await Roots.create([root]), nonces, verifier: createGrantVerifier(keys.publicKey) });
  const target = join(root, 'old.log');
  writeFileSync(target, 'seen by the reviewer');
  const args = { path: target, recursive: false };
  const prepared = await gate.prepareApproval({ toolName: 'fs_delete', args });
  const fingerprint = callFingerprint({ jobId: 'job-1', scope: {}, toolName: 'fs_delete', normalizedArgs: args, ruleId: 'r', ruleVersion: 1 });
  const grant = signer.sign({ v: 1, jobId: 'job-1', callId: 'c1', fingerprint, nonce: prepared.nonce, expiresAt: Date.now() + 60_000 });
  const approved: ApprovedCheck = {
    originalTargets: [target],
    allowedTools: ['fs_delete'],
    reviewer: 'alice',
    reviewers: null,
    separateRequester: false,
    requester: 'tester',
    observed: prepared.observed,
  };
  const input = { jobId: 'job-1', callId: 'c1', scope: {}, toolName: 'fs_delete', args, ruleId: 'r', ruleVersion: 1, grant, approved };

  // As the reviewer saw it: it runs, once; a retry finds the nonce spent and reports, though the target is gone now.
  expect(await gate.execute(input)).toMatchObject({ ok: true, replayed: false });
  expect(existsSync(target)).toBe(false);
  expect(await gate.execute(input)).toMatchObject({ ok: true, replayed: true });

  // Changed after the approval: refused, nothing deleted, the nonce unspent.
  const later = join(root, 'later.log');
  writeFileSync(later, 'seen by the reviewer');
  const laterArgs = { path: later, recursive: false };
  const seen = await gate.prepareApproval({ toolName: 'fs_delete', args: laterArgs });
  writeFileSync(later, 'changed after the approval');
  const laterFingerprint = callFingerprint({ jobId: 'job-1', scope: {}, toolName: 'fs_delete', normalizedArgs: laterArgs, ruleId: 'r', ruleVersion: 1 });
  const changed = await gate.execute({
    ...input,
    callId: 'c3',
    args: laterArgs,
    grant: signer.sign({ v: 1, jobId: 'job-1', callId: 'c3', fingerprint: laterFingerprint, nonce: seen.nonce, expiresAt: Date.now() + 60_000 }),
    approved: { ...approved, originalTargets: [later], observed: seen.observed },
  });
  expect(changed).toEqual({ refused: expect.stringMatching(/^the target changed since it was approved: .*later\.log/), ok: false, output: '', replayed: false });
  expect(existsSync(later)).toBe(true);
  expect(await nonces.lookup(seen.nonce)).toBeUndefined();

  // The reviewer's permission is part of the check.
  writeFileSync(join(root, 'other.log'), 'x');
  const otherArgs = { path: join(root, 'other.log'), recursive: false };
  const other = await gate.prepareApproval({ toolName: 'fs_delete', args: otherArgs });
  const otherFingerprint = callFingerprint({ jobId: 'job-1', scope: {}, toolName: 'fs_delete', normalizedArgs: otherArgs, ruleId: 'r', ruleVersion: 1 });
  const refused = await gate.execute({
    ...input,
    callId: 'c2',
    args: otherArgs,
    grant: signer.sign({ v: 1, jobId: 'job-1', callId: 'c2', fingerprint: otherFingerprint, nonce: other.nonce, expiresAt: Date.now() + 60_000 }),
    approved: { ...approved, originalTargets: [otherArgs.path], observed: other.observed, reviewers: ['bob'] },
  });
  expect(refused).toMatchObject({ refused: 'reviewer alice is not allowed to approve this call' });
  expect(existsSync(otherArgs.path)).toBe(true);
});
