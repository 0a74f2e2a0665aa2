import { createHash, generateKeyPairSync } from 'node:crypto';
import { appendFileSync, chmodSync, existsSync, linkSync, symlinkSync, mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ExecuteInput, ExecuteResult } from '../../activities/tool-gate';
import { actionSentence } from '../../core/reviewer/action-sentence';
import { changeOf } from '../../core/reviewer/change-view';
import { approvedCalls } from '../helpers/approved-call';
import { gateOver, runAttempt, undoFixture } from '../helpers/undo-root';
import { treeListing } from '../helpers/tree-listing';

/**
 * Reversible bulk moves through the real gate activities on real folders:
 * every entry the move moved goes back where it was (inode, bytes, mode),
 * only while each is still the entry the move left and its old place is
 * free — one changed entry refuses the whole undo, moving nothing. An undo
 * killed part way is finished by its retry; one still running keeps a
 * second undo out.
 */
const keys = generateKeyPairSync('ed25519');
const f = undoFixture('airlock-undo-many-', keys.publicKey);
const sha = (bytes: Buffer) => createHash('sha256').update(bytes).digest('hex');

const moveCall = approvedCalls({ gate: () => f.gate, privateKey: keys.privateKey, jobId: 'job-1' });
const undoCall = approvedCalls({ gate: () => f.gate, privateKey: keys.privateKey, jobId: 'undo-job-1' });
const run = (input: ExecuteInput, attempt = 1): Promise<ExecuteResult> => runAttempt(f.gate, input, attempt);


type Moves = Array<{ from: string; to: string }>;

/** `count` files in `inbox/` (each its own bytes and mode), to be moved into `library/`. */
function inbox(count: number): Moves {
  mkdirSync(join(f.root, 'inbox'));
  mkdirSync(join(f.root, 'library'));
  return Array.from({ length: count }, (_, i) => {
    const name = `episode-${String(i).padStart(3, '0')}.mkv`;
    writeFileSync(join(f.root, 'inbox', name), `${name} ${'#'.repeat(i)}`);
    chmodSync(join(f.root, 'inbox', name), i % 2 === 0 ? 0o640 : 0o604);
    return { from: `inbox/${name}`, to: `library/${name}` };
  });
}

/** Inode, bytes, mode and mtime of every entry in a folder, by name. */
function facts(folder: string) {
  return Object.fromEntries(
    readdirSync(join(f.root, folder)).map((name) => {
      const s = statSync(join(f.root, folder, name));
      return [name, { ino: s.ino, mode: s.mode, mtime: s.mtimeMs, bytes: s.isFile() ? sha(readFileSync(join(f.root, folder, name))) : null }];
    }),
  );
}

async function movedAll(moves: Moves) {
  const { prepared, input } = await moveCall('fs_move_many', { moves });
  const sentence = actionSentence({ toolName: 'fs_move_many', args: input.args, observed: prepared.observed, target: '', ...(prepared.undo !== undefined ? { undo: prepared.undo } : {}) });
  const result = await run(input);
  return { callId: input.callId, nonce: prepared.nonce, sentence, undo: prepared.undo, result };
}

async function undoCard(callId: string, moves: Moves) {
  return undoCall('fs_undo', { job: 'job-1', call: callId, moves });
}

async function movedBack(callId: string, moves: Moves) {
  const { prepared, input } = await undoCard(callId, moves);
  const sentence = actionSentence({ toolName: 'fs_undo', args: input.args, observed: prepared.observed, target: '' });
  return { warnings: prepared.warnings.join('\n'), sentence, result: await run(input) };
}

test('200 files and a folder of 50 moved as one set: the card says reversible, and the undo moves every entry back with its inode, bytes, mode and mtime', async () => {
  const moves = inbox(200);
  mkdirSync(join(f.root, 'inbox', 'extras'));
  for (let n = 0; n < 50; n++) writeFileSync(join(f.root, 'inbox', 'extras', `x${n}.srt`), `subtitle ${n}`);
  moves.push({ from: 'inbox/extras', to: 'library/extras' });
  utimesSync(join(f.root, 'inbox', 'episode-007.mkv'), new Date('2020-01-02'), new Date('2020-01-02'));
  const before = facts('inbox');
  const tree = treeListing(join(f.root, 'inbox', 'extras'));

  const m = await movedAll(moves);
  expect(m.undo).toEqual({ reversible: true, keepDays: 7 });
  expect(m.sentence).toBe('Move 201 entries — reversible for 7 days (airlock undo)');
  expect(m.result).toMatchObject({ ok: true, output: 'moved 201 of 201 entries (kept for undo: airlock undo moves them back)' });
  expect(readdirSync(join(f.root, 'inbox'))).toEqual([]);
  const record = await f.nonces.undoRecord(m.nonce);
  expect(record).toMatchObject({ state: 'held', toolName: 'fs_move_many', held: { type: 'set', files: 250 }, change: { kind: 'moved_many', count: 201 }, asideBytes: 0 });
  expect(record?.change?.kind === 'moved_many' ? record.change.entries.length : 0).toBe(201);
  // Nothing set aside: the quota is not touched.
  expect(await f.nonces.heldBytes(realpathSync(f.root))).toBe(0);

  const u = await movedBack(m.callId, moves);
  expect(u.sentence).toBe(`Undo call ${m.callId} of job job-1: move back what its bulk move of 201 entries moved`);
  expect(u.warnings).toBe('');
  expect(u.result).toMatchObject({ ok: true, output: `moved 201 entries back to where call ${m.callId} of job job-1 moved them from` });
  expect(facts('inbox')).toEqual(before);
  expect(treeListing(join(f.root, 'inbox', 'extras'))).toEqual(tree);
  expect(readdirSync(join(f.root, 'library'))).toEqual([]);
  expect(await f.nonces.undoRecord(m.nonce)).toMatchObject({ state: 'restored' });
  expect(readdirSync(join(f.root, '.airlock-undo'))).toEqual([]);
  // Once undone, it is done.
  expect((await movedBack(m.callId, moves)).warnings).toContain(`call ${m.callId} of job job-1 was already undone`);
});

/**
 * What a bulk move killed after moving `moved` entries leaves: its nonce
 * consumed, its undo mark, its journal (the plan, each moved entry between
 * `moving` and `moved`) and those entries at their destinations.
 */
async function killedMidBatch(moves: Moves, moved: number | 'before-plan') {
  const { prepared, input } = await moveCall('fs_move_many', { moves });
  await f.nonces.consume({ nonce: prepared.nonce, jobId: input.jobId, callId: input.callId, fingerprint: input.grant.claims.fingerprint, before: prepared.observed });
  mkdirSync(join(f.root, '.airlock-undo', prepared.nonce), { recursive: true, mode: 0o700 });
  writeFileSync(join(f.root, '.airlock-undo', prepared.nonce, 'move.json'), JSON.stringify({ kind: 'moved_many', count: moves.length }));
  const entries = moves.map((m) => {
    const s = statSync(join(f.root, m.from));
    return { from: m.from, to: m.to, type: 'file', dev: s.dev, ino: s.ino, size: s.size, mtimeMs: s.mtimeMs, mode: (s.mode & 0o7777).toString(8), digest: sha(readFileSync(join(f.root, m.from))) };
  });
  if (moved === 'before-plan') return { prepared, input };
  const lines = [{ step: 'plan', digest: 'd', entries }, ...moves.slice(0, moved).flatMap((_, index) => [{ step: 'moving', index }, { step: 'moved', index }])];
  mkdirSync(join(f.dir, 'journals'), { recursive: true });
  writeFileSync(join(f.dir, 'journals', `${prepared.nonce}.jsonl`), lines.map((record) => `${JSON.stringify({ schemaVersion: 1, at: new Date().toISOString(), record: { schemaVersion: 1, ...record } })}\n`).join(''));
  for (const m of moves.slice(0, moved)) renameSync(join(f.root, m.from), join(f.root, m.to));
  return { prepared, input };
}

test('a bulk move killed part way, resumed by its retry with a destination taken meanwhile: its record lists what both attempts moved; the undo moves those back and leaves the rest alone', async () => {
  const moves = inbox(10);
  const { prepared, input } = await killedMidBatch(moves, 4);
  writeFileSync(join(f.root, 'library', 'episode-006.mkv'), 'someone else');
  expect(await run(input, 2)).toMatchObject({ ok: false, reconciled: 'ran_now', output: expect.stringMatching(/^moved 9 of 10 entries: 4 before an interruption, 5 now \(kept for undo: airlock undo moves them back\)\nleft alone, neither moved nor as planned \(1; check them\): inbox\/episode-006.mkv/) });
  const record = await f.nonces.undoRecord(prepared.nonce);
  expect(record?.change?.kind === 'moved_many' ? record.change.entries.map((e) => e.index) : []).toEqual([0, 1, 2, 3, 4, 5, 7, 8, 9]);

  // The undo's card says how many of the call's entries go back, and their size.
  const card = await undoCard(input.callId, moves);
  expect(changeOf({ toolName: 'fs_undo', args: card.input.args, observed: card.prepared.observed })).toMatchObject({ kind: 'moves', total: expect.stringMatching(/^9 of 10 entries, \d+ bytes in total$/) });

  // Every moved entry as recorded, the one it never moved named otherwise: not the call's list, and the card does not offer it.
  mkdirSync(join(f.root, 'precious'));
  writeFileSync(join(f.root, 'precious', 'b'), 'keep me here');
  const forged = moves.map((m, i) => (i === 6 ? { from: 'precious/a', to: 'precious/b' } : m));
  expect((await movedBack(input.callId, forged)).warnings).toContain(`the moves named are not the list call ${input.callId} of job job-1 made; name that call's moves as it made them`);
  expect(readFileSync(join(f.root, 'precious', 'b'), 'utf8')).toBe('keep me here');

  const u = await movedBack(input.callId, moves);
  expect(u.result).toMatchObject({ ok: true, output: `moved 9 entries back to where call ${input.callId} of job job-1 moved them from; 1 entry of the call's 10 was not moved by it and was left as it is` });
  expect(readdirSync(join(f.root, 'inbox'))).toHaveLength(10);
  expect(readdirSync(join(f.root, 'library'))).toEqual(['episode-006.mkv']);
  expect(readFileSync(join(f.root, 'library', 'episode-006.mkv'), 'utf8')).toBe('someone else');
});

test.each([
  ['after its plan', 0],
  ['after its mark, before its plan', 'before-plan'],
] as const)('a bulk move killed %s, before its first move: the retry moves every entry once and records them all', async (_when, point) => {
  const moves = inbox(5);
  const { prepared, input } = await killedMidBatch(moves, point);
  expect(await run(input, 2)).toMatchObject({ ok: true, reconciled: 'ran_now' });
  const record = await f.nonces.undoRecord(prepared.nonce);
  expect(record?.change?.kind === 'moved_many' ? record.change.entries.length : 0).toBe(5);
  expect((await movedBack(input.callId, moves)).result).toMatchObject({ ok: true });
  expect(readdirSync(join(f.root, 'inbox'))).toHaveLength(5);
});

test('a bulk move killed between the link and the unlink of a file: the retry finishes that entry (its old name goes) and the rest, records all, and the undo moves every one back with one name', async () => {
  const moves = inbox(4);
  const { prepared, input } = await killedMidBatch(moves, 2);
  appendFileSync(join(f.dir, 'journals', `${prepared.nonce}.jsonl`), `${JSON.stringify({ schemaVersion: 1, at: new Date().toISOString(), record: { schemaVersion: 1, step: 'moving', index: 2 } })}\n`);
  linkSync(join(f.root, moves[2]?.from ?? ''), join(f.root, moves[2]?.to ?? ''));
  expect(await run(input, 2)).toMatchObject({ ok: true, reconciled: 'ran_now', output: expect.stringMatching(/^moved 4 of 4 entries: 3 before an interruption, 1 now/) });
  expect(readdirSync(join(f.root, 'inbox'))).toEqual([]);
  expect(statSync(join(f.root, moves[2]?.to ?? '')).nlink).toBe(1);
  const record = await f.nonces.undoRecord(prepared.nonce);
  expect(record?.change?.kind === 'moved_many' ? record.change.entries.map((e) => e.index) : []).toEqual([0, 1, 2, 3]);
  expect((await movedBack(input.callId, moves)).result).toMatchObject({ ok: true, output: `moved 4 entries back to where call ${input.callId} of job job-1 moved them from` });
  expect(readdirSync(join(f.root, 'library'))).toEqual([]);
  expect(statSync(join(f.root, moves[2]?.from ?? '')).nlink).toBe(1);
});

test('the record is the journal\'s: an entry the call moved and someone edited since stays in it (the undo then refuses, naming it); an entry someone else moved as planned is not the call\'s', async () => {
  const moves = inbox(6);
  const { prepared, input } = await killedMidBatch(moves, 3);
  appendFileSync(join(f.root, moves[1]?.to ?? ''), ' edited after the move');
  renameSync(join(f.root, moves[4]?.from ?? ''), join(f.root, moves[4]?.to ?? ''));
  expect(await run(input, 2)).toMatchObject({ reconciled: 'ran_now' });
  const record = await f.nonces.undoRecord(prepared.nonce);
  expect(record?.change?.kind === 'moved_many' ? record.change.entries.map((e) => e.index) : []).toEqual([0, 1, 2, 3, 5]);
  const u = await movedBack(input.callId, moves);
  expect(u.warnings).toContain(`nothing was moved back: ${realpathSync(f.root)}/library/episode-001.mkv changed after the move`);
  expect(readdirSync(join(f.root, 'inbox'))).toEqual([]);
});

test('a file left under both names and a retry that finds its grant expired: the retry still finishes that entry and records it before it gives up', async () => {
  const moves = inbox(4);
  const { prepared, input } = await killedMidBatch(moves, 2);
  appendFileSync(join(f.dir, 'journals', `${prepared.nonce}.jsonl`), `${JSON.stringify({ schemaVersion: 1, at: new Date().toISOString(), record: { schemaVersion: 1, step: 'moving', index: 2 } })}\n`);
  linkSync(join(f.root, moves[2]?.from ?? ''), join(f.root, moves[2]?.to ?? ''));
  f.gate = await gateOver(f, keys.publicKey, { now: () => Date.now() + 5 * 60_000 });
  await expect(run(input, 2)).rejects.toThrow(/expired/);
  expect(existsSync(join(f.root, moves[2]?.from ?? ''))).toBe(false);
  expect(statSync(join(f.root, moves[2]?.to ?? '')).nlink).toBe(1);
  const record = await f.nonces.undoRecord(prepared.nonce);
  expect(record?.change?.kind === 'moved_many' ? record.change.entries.map((e) => e.index) : []).toEqual([0, 1, 2]);
});

test('a bulk move promised reversible, resumed by a worker whose root is no longer set up for undo: it moves no more, and says what had moved', async () => {
  const moves = inbox(5);
  const { input } = await killedMidBatch(moves, 2);
  const { Roots } = await import('../../host/fs/roots');
  const { createToolGateActivities } = await import('../../activities/tool-gate');
  const { createGrantVerifier } = await import('../../host/keys/grant-keys');
  f.gate = createToolGateActivities({ roots: await Roots.create([f.root]), nonces: f.nonces, verifier: createGrantVerifier(keys.publicKey), claimStaleMs: 0, undo: { roots: [], keepDays: 7 }, journalDir: join(f.dir, 'journals') });
  expect(await run(input, 2)).toMatchObject({ ok: false, output: expect.stringMatching(new RegExp(`^Refused: 2 of 5 entries had moved before an interruption, and no more were moved: the approved change was to be reversible, but ${realpathSync(f.root)} is not set up for undo\\n`)) });
  expect(readdirSync(join(f.root, 'inbox'))).toHaveLength(3);
});

test('an entry that cannot be observed after a kill (its folder swapped for a link out of the roots): the retry moves no more and says so; what moved is recorded and can be undone', async () => {
  const moves = inbox(4);
  mkdirSync(join(f.root, 'library', 'late'));
  moves[3] = { from: moves[3]?.from ?? '', to: 'library/late/episode-003.mkv' };
  const { prepared, input } = await killedMidBatch(moves, 2);
  const outside = join(f.dir, 'elsewhere');
  mkdirSync(outside);
  renameSync(join(f.root, 'library', 'late'), join(f.dir, 'late-moved-away'));
  symlinkSync(outside, join(f.root, 'library', 'late'));
  expect(await run(input, 2)).toMatchObject({ ok: false, output: expect.stringMatching(/^Refused: 2 of 4 entries had moved before an interruption, and no more were moved: library\/late\/episode-003.mkv leads outside the allowed roots/) });
  const record = await f.nonces.undoRecord(prepared.nonce);
  expect(record?.change?.kind === 'moved_many' ? record.change.entries.map((e) => e.index) : []).toEqual([0, 1]);
  expect(readdirSync(outside)).toEqual([]);
  expect((await movedBack(input.callId, moves)).result).toMatchObject({ ok: true, output: expect.stringContaining('moved 2 entries back') });
  expect(readdirSync(join(f.root, 'inbox'))).toHaveLength(4);
});

test('a bulk move killed part way whose retry finds its grant expired: what moved is recorded before the retry gives up, and can be undone', async () => {
  const moves = inbox(6);
  const { prepared, input } = await killedMidBatch(moves, 3);
  f.gate = await gateOver(f, keys.publicKey, { now: () => Date.now() + 5 * 60_000 });
  await expect(run(input, 2)).rejects.toThrow(/expired/);
  const record = await f.nonces.undoRecord(prepared.nonce);
  expect(record?.change?.kind === 'moved_many' ? record.change.entries.map((e) => e.index) : []).toEqual([0, 1, 2]);
  f.gate = await gateOver(f, keys.publicKey);
  expect((await movedBack(input.callId, moves)).result).toMatchObject({ ok: true, output: expect.stringContaining('moved 3 entries back') });
  expect(readdirSync(join(f.root, 'inbox'))).toHaveLength(6);
});

test('a path that goes through a symbolic link (an alias another entry may move): the card does not promise undo, and nothing is kept', async () => {
  const moves = inbox(2);
  mkdirSync(join(f.root, 'shelf'));
  symlinkSync('../library', join(f.root, 'shelf', 'lib'));
  const m = await movedAll([{ from: moves[0]?.from ?? '', to: 'shelf/lib/episode-000.mkv' }, moves[1] ?? { from: '', to: '' }]);
  expect(m.undo).toEqual({ reversible: false, why: expect.stringContaining(`${realpathSync(f.root)}/shelf/lib/episode-000.mkv goes through a symbolic link (its real place is ${realpathSync(f.root)}/library/episode-000.mkv)`) });
  expect(m.sentence).toBe('Move 2 entries');
  expect(m.result).toMatchObject({ ok: true, output: 'moved 2 of 2 entries' });
  expect(await f.nonces.undoRecord(m.nonce)).toBeUndefined();
});

test('refused, naming why and moving nothing: one entry changed after the move, one old place taken, a list that is not the call\'s', async () => {
  const moves = inbox(20);
  const m = await movedAll(moves);
  const real = realpathSync(f.root);
  writeFileSync(join(f.root, 'library', 'episode-003.mkv'), 'edited after the move');
  writeFileSync(join(f.root, 'inbox', 'episode-011.mkv'), 'a new file at the old place');

  const u = await movedBack(m.callId, moves);
  expect(u.warnings).toContain(`nothing was moved back: ${real}/library/episode-003.mkv changed after the move (its content changed since it was kept); ${real}/inbox/episode-011.mkv exists again (made after the move); move or delete it first`);
  expect(u.result.ok).toBe(false);
  expect(readdirSync(join(f.root, 'library'))).toHaveLength(20);
  expect(readdirSync(join(f.root, 'inbox'))).toEqual(['episode-011.mkv']);

  expect((await movedBack(m.callId, moves.slice(1))).warnings).toContain(`call ${m.callId} of job job-1 made 20 moves and 19 are named; name its whole list of moves`);
  const other = moves.map((mv, i) => (i === 4 ? { from: 'inbox/elsewhere.mkv', to: mv.to } : mv));
  expect((await movedBack(m.callId, other)).warnings).toContain(`the moves named are not the list call ${m.callId} of job job-1 made`);
  expect((await undoCall('fs_undo', { job: 'job-1', call: m.callId, path: join(f.root, 'inbox/episode-000.mkv') })).prepared.warnings.join('\n')).toContain(`call ${m.callId} of job job-1 was a bulk move: name its moves to undo it`);
  expect(await f.nonces.undoRecord(m.nonce)).toMatchObject({ state: 'held' });
});

test('past its undo time: refused, moving nothing', async () => {
  const moves = inbox(3);
  f.gate = await gateOver(f, keys.publicKey, { now: () => Date.now() - 8 * 24 * 3600 * 1000 });
  const m = await movedAll(moves);
  f.gate = await gateOver(f, keys.publicKey);
  const u = await movedBack(m.callId, moves);
  expect(u.warnings).toContain(`the undo time of call ${m.callId} of job job-1 ended on `);
  expect(u.result.ok).toBe(false);
  expect(readdirSync(join(f.root, 'library'))).toHaveLength(3);
});

test('entries someone moved back by hand count as back (whatever was saved at their destination since): the undo moves the rest', async () => {
  const moves = inbox(12);
  const m = await movedAll(moves);
  for (const mv of moves.slice(0, 3)) renameSync(join(f.root, mv.to), join(f.root, mv.from));
  writeFileSync(join(f.root, moves[1]?.to ?? ''), 'a new file saved where the entry had gone');
  const u = await movedBack(m.callId, moves);
  expect(u.result).toMatchObject({ ok: true, output: `moved 9 entries back to where call ${m.callId} of job job-1 moved them from (3 were back already)` });
  expect(readdirSync(join(f.root, 'inbox'))).toHaveLength(12);
});

test('a destination in a root not set up for undo: the card does not promise it, nothing is kept, and the move runs as before', async () => {
  const other = join(f.dir, 'media');
  mkdirSync(other);
  const moves = inbox(3);
  moves[2] = { from: moves[2]?.from ?? '', to: join(other, 'episode-002.mkv') };
  const { Roots } = await import('../../host/fs/roots');
  const { createToolGateActivities } = await import('../../activities/tool-gate');
  const { createGrantVerifier } = await import('../../host/keys/grant-keys');
  f.gate = createToolGateActivities({ roots: await Roots.create([f.root, other]), nonces: f.nonces, verifier: createGrantVerifier(keys.publicKey), claimStaleMs: 0, undo: f.undo, journalDir: join(f.dir, 'journals') });
  const m = await movedAll(moves);
  expect(m.undo).toEqual({ reversible: false, why: `${realpathSync(other)} is not set up for undo` });
  expect(m.result).toMatchObject({ ok: true, output: 'moved 3 of 3 entries' });
  expect(await f.nonces.undoRecord(m.nonce)).toBeUndefined();
  expect(existsSync(join(f.root, '.airlock-undo', m.nonce))).toBe(false);
});

describe('an undo killed part way', () => {
  /** What an undo killed after moving `back` entries back leaves: its nonce consumed, those entries back, the next one under both names, and its mark. */
  async function killedUndo(callId: string, nonce: string, moves: Moves, back: number, markAgeMs: number) {
    const call = await undoCard(callId, moves);
    const { prepared, input } = call;
    await f.nonces.consume({ nonce: prepared.nonce, jobId: input.jobId, callId: input.callId, fingerprint: input.grant.claims.fingerprint, before: prepared.observed });
    for (const mv of moves.slice(0, back)) renameSync(join(f.root, mv.to), join(f.root, mv.from));
    const half = moves[back];
    if (half !== undefined) linkSync(join(f.root, half.to), join(f.root, half.from));
    const mark = join(f.root, '.airlock-undo', nonce, 'undoing');
    writeFileSync(mark, '');
    const at = new Date(Date.now() - markAgeMs);
    utimesSync(mark, at, at);
    return input;
  }

  test('its retry finds the mark untouched and finishes: every entry back once, its record restored, ran_before', async () => {
    const moves = inbox(200);
    const before = facts('inbox');
    const m = await movedAll(moves);
    const input = await killedUndo(m.callId, m.nonce, moves, 80, 60_000);
    expect(await run(input, 2)).toMatchObject({ ok: true, reconciled: 'ran_before' });
    expect(facts('inbox')).toEqual(before);
    expect(readdirSync(join(f.root, 'library'))).toEqual([]);
    expect(await f.nonces.undoRecord(m.nonce)).toMatchObject({ state: 'restored' });
    expect(readdirSync(join(f.root, '.airlock-undo'))).toEqual([]);
  });

  test('left untouched and never retried: the next undo of the call finishes it, and says so', async () => {
    const moves = inbox(10);
    const m = await movedAll(moves);
    await killedUndo(m.callId, m.nonce, moves, 4, 60_000);
    const u = await movedBack(m.callId, moves);
    expect(u.result).toMatchObject({ ok: true, output: `the 10 entries call ${m.callId} of job job-1 moved are back where they were (6 of them moved back now, finishing an undo that was cut short)` });
    expect(readdirSync(join(f.root, 'library'))).toEqual([]);
    expect(readdirSync(join(f.root, 'inbox'))).toHaveLength(10);
  });

  test('while its mark is being touched (an undo still running), a second undo refuses and moves nothing', async () => {
    const moves = inbox(10);
    const m = await movedAll(moves);
    await killedUndo(m.callId, m.nonce, moves, 4, 0);
    const u = await movedBack(m.callId, moves);
    expect(u.result).toMatchObject({ ok: false, output: `Refused: another undo of call ${m.callId} of job job-1 is moving its entries back right now; nothing was moved` });
    expect(readdirSync(join(f.root, 'library'))).toHaveLength(6);
  });

  test('eight undos of one bulk move at once: one moves the entries back, the others refuse', async () => {
    const moves = inbox(30);
    const m = await movedAll(moves);
    const cards = await Promise.all(Array.from({ length: 8 }, () => undoCard(m.callId, moves)));
    const results = await Promise.all(cards.map((c) => run(c.input)));
    expect(results.filter((r) => r.ok)).toHaveLength(1);
    expect(readdirSync(join(f.root, 'inbox'))).toHaveLength(30);
    expect(readdirSync(join(f.root, 'library'))).toEqual([]);
  });
});
