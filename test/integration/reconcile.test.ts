import { generateKeyPairSync } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, writeFileSync, appendFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createToolGateActivities, type ExecuteInput, type ExecuteResult } from '../../activities/tool-gate';
import { approvedCalls } from '../helpers/approved-call';
import { FailureTypes } from '../../core/temporal/failure-types';
import { Texts } from '../../core/job/texts';
import { createGrantVerifier } from '../../host/keys/grant-keys';
import { SqliteNonceStore } from '../../host/stores/nonces/sqlite';
import { Roots } from '../../host/fs/roots';

/**
 * What a retried `execute` does when the attempt that consumed the nonce
 * died before recording its outcome: the real activity functions, on real
 * folders, with the crashed attempt's trace (a consumed nonce with the
 * targets as they were) written to a real store, and the effect done by
 * hand or not.
 */
let dir: string;
let root: string;
let nonces: SqliteNonceStore;
let gate: ReturnType<typeof createToolGateActivities>;
const keys = generateKeyPairSync('ed25519');

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-reconcile-'));
  root = join(dir, 'root');
  mkdirSync(root);
  nonces = new SqliteNonceStore(join(dir, 'tools', 'nonces.sqlite'));
  // A crashed attempt's claim lapses at once here; the default waits 20 s for a live one.
  gate = createToolGateActivities({ roots: await Roots.create([root]), nonces, verifier: createGrantVerifier(keys.publicKey), claimStaleMs: 0 });
});
afterEach(async () => {
  await nonces.close();
  rmSync(dir, { recursive: true, force: true });
});

const calls = approvedCalls({ gate: () => gate, privateKey: keys.privateKey });

/** An approved call as `execute` receives it, after `prepareApproval` observed its targets; `approved: false`, a call a rule let run. */
async function approvedCall(toolName: string, args: Record<string, unknown>, options: { approved?: boolean } = {}): Promise<ExecuteInput> {
  const { input } = await calls(toolName, args);
  if (options.approved !== false) return input;
  const { approved: _approved, ...allowed } = input;
  return allowed;
}

/** What the attempt that died left behind: the nonce consumed with the targets as it saw them, no outcome. */
async function crashedAttempt(input: ExecuteInput): Promise<void> {
  const before = input.approved?.observed ?? (await gate.prepareApproval({ toolName: input.toolName, args: input.args })).observed;
  const fingerprint = input.grant.claims.fingerprint;
  expect(await nonces.consume({ nonce: input.grant.claims.nonce, jobId: input.jobId, callId: input.callId, fingerprint, before })).toEqual({ consumed: true });
}

/** A retry as Temporal runs it: attempt 2 of the activity. */
function retry(input: ExecuteInput, store = gate): Promise<ExecuteResult> {
  return new MockActivityEnvironment({ attempt: 2 }).run(store.execute, input);
}

test('fs_write append: the effect in place is reported as run before, never appended twice; a later retry reports the same', async () => {
  const file = join(root, 'log.txt');
  writeFileSync(file, 'line 1\n');
  const input = await approvedCall('fs_write', { path: 'log.txt', content: 'line 2\n', mode: 'append' });
  await crashedAttempt(input);
  appendFileSync(file, 'line 2\n'); // the effect happened; the outcome was never recorded

  const result = await retry(input);
  expect(result).toMatchObject({ ok: true, replayed: true, reconciled: 'ran_before' });
  expect(result.output).toMatch(/^Done: this call's effect is in place \(.*log\.txt ends with the appended 7 bytes once\)/);
  expect(readFileSync(file, 'utf8')).toBe('line 1\nline 2\n');
  expect((await nonces.lookup(input.grant.claims.nonce))?.outcome).toMatchObject({ ok: true, reconciled: 'ran_before' });
  expect(await retry(input)).toMatchObject({ ok: true, replayed: true, reconciled: 'ran_before' });
  expect(readFileSync(file, 'utf8')).toBe('line 1\nline 2\n');
});

test('fs_write append: the effect absent and the target as approved, it runs now, once', async () => {
  const file = join(root, 'log.txt');
  writeFileSync(file, 'line 1\n');
  const input = await approvedCall('fs_write', { path: 'log.txt', content: 'line 2\n', mode: 'append' });
  await crashedAttempt(input);

  const result = await retry(input);
  expect(result).toMatchObject({ ok: true, replayed: false, reconciled: 'ran_now' });
  expect(result.output).toBe(`wrote 7 bytes to ${file} (append)\n${Texts.reconciledRanNow}`);
  expect(readFileSync(file, 'utf8')).toBe('line 1\nline 2\n');
  expect(await retry(input)).toMatchObject({ ok: true, replayed: true, reconciled: 'ran_now' });
  expect(readFileSync(file, 'utf8')).toBe('line 1\nline 2\n');
});

test('fs_write overwrite, fs_delete, fs_move and fs_chmod each recognise their own effect', async () => {
  writeFileSync(join(root, 'a.txt'), 'old');
  const write = await approvedCall('fs_write', { path: 'a.txt', content: 'new', mode: 'overwrite' });
  writeFileSync(join(root, 'b.txt'), 'bye');
  const del = await approvedCall('fs_delete', { path: 'b.txt', recursive: false });
  writeFileSync(join(root, 'c.txt'), 'moving');
  const move = await approvedCall('fs_move', { from: 'c.txt', to: 'd.txt', overwrite: false });
  writeFileSync(join(root, 'e.txt'), 'mode');
  chmodSync(join(root, 'e.txt'), 0o644);
  const chmod = await approvedCall('fs_chmod', { path: 'e.txt', mode: '600' });
  for (const input of [write, del, move, chmod]) await crashedAttempt(input);
  writeFileSync(join(root, 'a.txt'), 'new');
  unlinkSync(join(root, 'b.txt'));
  renameSync(join(root, 'c.txt'), join(root, 'd.txt'));
  chmodSync(join(root, 'e.txt'), 0o600);

  expect(await retry(write)).toMatchObject({ ok: true, reconciled: 'ran_before', output: expect.stringMatching(/a\.txt holds the intended content/) });
  expect(await retry(del)).toMatchObject({ ok: true, reconciled: 'ran_before', output: expect.stringMatching(/b\.txt is gone/) });
  expect(await retry(move)).toMatchObject({ ok: true, reconciled: 'ran_before', output: expect.stringMatching(/c\.txt is gone and .*d\.txt is the moved entry/) });
  expect(await retry(chmod)).toMatchObject({ ok: true, reconciled: 'ran_before', output: expect.stringMatching(/e\.txt has mode 600/) });
});

test('a move whose destination is another file is not taken for the move; with the source gone too, the outcome is unknown', async () => {
  writeFileSync(join(root, 'c.txt'), 'moving');
  const move = await approvedCall('fs_move', { from: 'c.txt', to: 'd.txt', overwrite: false });
  await crashedAttempt(move);
  writeFileSync(join(root, 'd.txt'), 'moving'); // same bytes, another inode: not the moved entry
  unlinkSync(join(root, 'c.txt'));

  const result = await retry(move);
  expect(result).toMatchObject({ ok: false, replayed: true, reconciled: 'unknown' });
  expect(result.output).toMatch(/^Outcome unknown: .*d\.txt is not the moved entry.*c\.txt no longer exists/);
  expect(result.output).not.toMatch(/Not executed|could not be run/);
});

test('neither the effect nor the approved state: outcome unknown, nothing runs, and a duplicate reports the same', async () => {
  const file = join(root, 'keep.txt');
  writeFileSync(file, 'approved content');
  const input = await approvedCall('fs_delete', { path: 'keep.txt', recursive: false });
  await crashedAttempt(input);
  writeFileSync(file, 'changed by someone since');

  const result = await retry(input);
  expect(result).toMatchObject({ ok: false, replayed: true, reconciled: 'unknown' });
  expect(result.output).toMatch(/^Outcome unknown: .*keep\.txt still exists.*content changed/);
  expect(readFileSync(file, 'utf8')).toBe('changed by someone since');
  expect(await retry(input)).toMatchObject({ ok: false, replayed: true, reconciled: 'unknown', output: expect.stringMatching(/^Outcome unknown/) });
  expect(existsSync(file)).toBe(true);
});

test('a store that does not know the nonce on a retry reconciles instead of running afresh', async () => {
  const file = join(root, 'log.txt');
  writeFileSync(file, 'line 1\n');
  const input = await approvedCall('fs_write', { path: 'log.txt', content: 'line 2\n', mode: 'append' });
  // The attempt consumed the nonce in a store that was then lost, after the effect.
  appendFileSync(file, 'line 2\n');
  expect(await nonces.lookup(input.grant.claims.nonce)).toBeUndefined();

  expect(await retry(input)).toMatchObject({ ok: true, replayed: true, reconciled: 'ran_before' });
  expect(readFileSync(file, 'utf8')).toBe('line 1\nline 2\n');
  // Spent in this store from now on.
  expect((await nonces.lookup(input.grant.claims.nonce))?.outcome).toMatchObject({ reconciled: 'ran_before' });

  // The same for a call that never happened: the approved state still holds, so it runs now.
  const other = await approvedCall('fs_write', { path: 'log.txt', content: 'line 3\n', mode: 'append' });
  expect(await retry(other)).toMatchObject({ ok: true, replayed: false, reconciled: 'ran_now' });
  expect(readFileSync(file, 'utf8')).toBe('line 1\nline 2\nline 3\n');
});

test('an ungated call that the store does not know on a retry, its effect absent: unknown, since nothing says how the target was before', async () => {
  writeFileSync(join(root, 'x.txt'), 'x');
  const input = await approvedCall('fs_chmod', { path: 'x.txt', mode: '600' }, { approved: false });
  const mode = statSync(join(root, 'x.txt')).mode & 0o777;
  const result = await retry(input);
  expect(result).toMatchObject({ ok: false, reconciled: 'unknown', output: expect.stringMatching(/nothing records the target as it was before the call/) });
  expect(statSync(join(root, 'x.txt')).mode & 0o777).toBe(mode);
});

test('the first attempt runs as always and records the targets it started from; a read whose attempt died reads again', async () => {
  writeFileSync(join(root, 'x.txt'), 'x');
  const input = await approvedCall('fs_chmod', { path: 'x.txt', mode: '600' }, { approved: false });
  expect(await new MockActivityEnvironment({ attempt: 1 }).run(gate.execute, input)).toEqual({ ok: true, output: `changed mode of ${join(root, 'x.txt')} to 600`, replayed: false });
  expect((await nonces.lookup(input.grant.claims.nonce))?.before).toEqual([expect.objectContaining({ exists: true, mode: '644' })]);

  const read = await approvedCall('fs_read', { path: 'x.txt', maxBytes: 100 }, { approved: false });
  await crashedAttempt(read);
  expect(await retry(read)).toEqual({ ok: true, output: 'x', replayed: false });
});

test('a consumed nonce whose holder is still alive (renewing its lease) is not settled by another attempt', async () => {
  const live = createToolGateActivities({ roots: await Roots.create([root]), nonces, verifier: createGrantVerifier(keys.publicKey), claimStaleMs: 2000 });
  writeFileSync(join(root, 'log.txt'), 'line 1\n');
  const input = await approvedCall('fs_write', { path: 'log.txt', content: 'line 2\n', mode: 'append' });
  await crashedAttempt(input); // consumed just now: its holder is working on it, and renews its lease as its heartbeat does
  const beats = setInterval(() => void nonces.renew(input.grant.claims.nonce), 300);
  try {
    await expect(retry(input, live)).rejects.toMatchObject({ type: FailureTypes.NonceConsumed, nonRetryable: false });
  } finally {
    clearInterval(beats);
  }
  expect(readFileSync(join(root, 'log.txt'), 'utf8')).toBe('line 1\n');
});

test('a retry that finds the holder silent for less than the lease waits out the rest and settles the call in the same attempt', async () => {
  const patient = createToolGateActivities({ roots: await Roots.create([root]), nonces, verifier: createGrantVerifier(keys.publicKey), claimStaleMs: 1500 });
  writeFileSync(join(root, 'log.txt'), 'line 1\n');
  const input = await approvedCall('fs_write', { path: 'log.txt', content: 'line 2\n', mode: 'append' });
  await crashedAttempt(input); // consumed just now, and never renewed again: its worker was killed
  // Not a failure to be retried after a backoff: this attempt waits for the lease and settles it.
  expect(await retry(input, patient)).toMatchObject({ ok: true, reconciled: 'ran_now' });
  expect(readFileSync(join(root, 'log.txt'), 'utf8')).toBe('line 1\nline 2\n');
  // The outcome is recorded: nothing is held any more.
  expect(await nonces.silentFor(input.grant.claims.nonce)).toBeUndefined();
});

test('an ungated call reconciles against the targets its own attempt recorded when it consumed the nonce', async () => {
  writeFileSync(join(root, 'log.txt'), 'line 1\n');
  const append = await approvedCall('fs_write', { path: 'log.txt', content: 'line 2\n', mode: 'append' }, { approved: false });
  await crashedAttempt(append);
  expect(await retry(append)).toMatchObject({ ok: true, reconciled: 'ran_now' });
  expect(readFileSync(join(root, 'log.txt'), 'utf8')).toBe('line 1\nline 2\n');
});

test('a recursive delete that died halfway is neither done nor undone: outcome unknown, and what is left stays', async () => {
  mkdirSync(join(root, 'cache'));
  writeFileSync(join(root, 'cache', 'a'), 'a');
  writeFileSync(join(root, 'cache', 'b'), 'b');
  const input = await approvedCall('fs_delete', { path: 'cache', recursive: true });
  await crashedAttempt(input);
  unlinkSync(join(root, 'cache', 'a')); // the attempt got this far

  const result = await retry(input);
  expect(result).toMatchObject({ ok: false, reconciled: 'unknown' });
  expect(result.output).toMatch(/^Outcome unknown: .*cache still exists.*1 entry removed below/);
  expect(existsSync(join(root, 'cache', 'b'))).toBe(true);
});
