import { appendFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { detect } from '../../core/policy/detectors';
import { evaluateCall } from '../../core/policy/evaluate';
import { type CallContext } from '../../core/policy/call-evaluation';
import { buildSnapshot } from '../../core/policy/snapshot';
import { parseRulesDocument } from '../../host/config/rules-file';
import { preflight } from '../../core/job/preflight';
import { classifyEntry, MAX_MOVES, moveListProblems, readJournal, type PlannedEntry } from '../../core/tools/fs/move-plan';
import { toolSpecs } from '../../core/tools/json-schema';
import { pathTargetsOf, sideEffectToolNames } from '../../core/tools/registry';
import { createCallJournal, journalFile } from '../../host/tools/move-journal';

/**
 * The checks of a bulk move's list, before anything is touched: what the
 * model is told for duplicates, overlaps, chains, paths outside the roots
 * and too many entries; and the journal a crash is resumed from.
 */

const ROOT = '/srv/share';

function call(moves: unknown) {
  return preflight({ id: 'c1', name: 'fs_move_many', arguments: JSON.stringify({ moves }) }, sideEffectToolNames, [ROOT]);
}

function errorOf(moves: unknown): string {
  const c = call(moves);
  return c.kind === 'error' ? c.message : '';
}

test('a valid list passes, its paths made canonical from the first root', () => {
  const c = call([
    { from: 'in/a.mkv', to: 'films/./a.mkv' },
    { from: '/srv/share/in/../in/b.mkv', to: 'films/b.mkv' },
  ]);
  expect(c).toMatchObject({ kind: 'tool', category: 'file_change' });
  expect(c.kind === 'tool' ? c.args : undefined).toEqual({
    moves: [
      { from: '/srv/share/in/a.mkv', to: '/srv/share/films/a.mkv' },
      { from: '/srv/share/in/b.mkv', to: '/srv/share/films/b.mkv' },
    ],
  });
  expect(moveListProblems(c.kind === 'tool' ? (c.args.moves as Array<{ from: string; to: string }>) : [])).toEqual([]);
});

test('duplicates are refused: the same source twice, or two entries onto one destination', () => {
  expect(moveListProblems([
    { from: '/r/a', to: '/r/x' },
    { from: '/r/a', to: '/r/y' },
  ])).toEqual(['entries 1 and 2 both move /r/a']);
  expect(moveListProblems([
    { from: '/r/a', to: '/r/x' },
    { from: '/r/b', to: '/r/x' },
  ])).toEqual(['entries 1 and 2 both move to /r/x']);
  // Spelled differently, the same place: still one.
  expect(errorOf([
    { from: '/srv/share/a', to: '/srv/share/x' },
    { from: '/srv/share/./b/../a', to: '/srv/share/y' },
  ])).toBe('Error: invalid arguments for fs_move_many: moves: entries 1 and 2 both move /srv/share/a.');
});

test('a chain (a destination that is another entry\'s source) is refused, in either order', () => {
  const chain = [
    { from: '/r/a', to: '/r/b' },
    { from: '/r/b', to: '/r/c' },
  ];
  for (const moves of [chain, [...chain].reverse()]) {
    expect(moveListProblems(moves)).toEqual([expect.stringMatching(/moves to \/r\/b, which entry \d moves away \(chained moves are refused; move in two calls\)/)]);
  }
  // A swap is a chain both ways.
  expect(moveListProblems([
    { from: '/r/a', to: '/r/b' },
    { from: '/r/b', to: '/r/a' },
  ])).toHaveLength(2);
});

test('overlapping entries are refused: a folder and something inside it, as source or destination', () => {
  expect(moveListProblems([
    { from: '/r/photos', to: '/r/archive/photos' },
    { from: '/r/photos/2024/a.jpg', to: '/r/best/a.jpg' },
  ])).toEqual(['the source of entry 2 (/r/photos/2024/a.jpg) lies inside the source of entry 1 (/r/photos); overlapping moves are refused']);
  expect(moveListProblems([
    { from: '/r/a.txt', to: '/r/new/a.txt' },
    { from: '/r/b', to: '/r/new' },
  ])).toEqual(['the destination of entry 1 (/r/new/a.txt) lies inside the destination of entry 2 (/r/new); overlapping moves are refused']);
  expect(moveListProblems([{ from: '/r/a', to: '/r/a/inner' }])).toEqual(['entry 1 moves /r/a into itself (/r/a/inner)']);
  expect(moveListProblems([{ from: '/r/a', to: '/r/a' }])).toEqual(['entry 1 moves /r/a onto itself']);
  // A shared prefix that is not a folder boundary is no overlap.
  expect(moveListProblems([
    { from: '/r/ab', to: '/r/x/ab' },
    { from: '/r/a', to: '/r/y/a' },
  ])).toEqual([]);
});

test('too many moves, or none, are refused with what to do', () => {
  const many = Array.from({ length: MAX_MOVES + 1 }, (_, i) => ({ from: `in/${i}`, to: `out/${i}` }));
  expect(errorOf(many)).toBe(`Error: invalid arguments for fs_move_many: moves: at most ${MAX_MOVES} moves in one call; split the list.`);
  expect(errorOf([])).toBe('Error: invalid arguments for fs_move_many: moves: give at least one move.');
  expect(moveListProblems(many)).toEqual([`${MAX_MOVES + 1} moves are more than the ${MAX_MOVES} allowed in one call; split the list`]);
  expect(errorOf([{ from: 'a', to: 'b', overwrite: true }])).toMatch(/^Error: invalid arguments for fs_move_many: moves\.0: Unrecognized key/);
});

test('policy sees every path of the list: one outside the roots fires outside_roots', () => {
  const inside = call([{ from: 'a', to: 'b' }]);
  const outside = call([
    { from: 'a', to: 'b' },
    { from: 'c', to: '../../etc/cron.d/x' },
  ]);
  const fires = (c: ReturnType<typeof call>) =>
    c.kind === 'tool' &&
    detect('outside_roots', {
      toolName: 'fs_move_many',
      category: 'file_change',
      args: c.args,
      targets: pathTargetsOf('fs_move_many', c.args),
      settings: { roots: [ROOT], allowedHosts: [], deniedCommands: [] },
    });
  expect(pathTargetsOf('fs_move_many', outside.kind === 'tool' ? outside.args : {})).toEqual(['/srv/share/a', '/srv/share/b', '/srv/share/c', '/etc/cron.d/x']);
  expect(fires(inside)).toBe(false);
  expect(fires(outside)).toBe(true);
});

const planned: PlannedEntry = { from: '/r/a', to: '/r/b', type: 'file', dev: 1, ino: 42, size: 3, mtimeMs: 1000 };
const entry = { exists: true, dev: 1, ino: 42, type: 'file', mtimeMs: 1000 };
const gone = { exists: false };

test('an entry is moved, not moved or unknown by its identity at both ends', () => {
  expect(classifyEntry(planned, gone, entry)).toBe('moved');
  expect(classifyEntry(planned, entry, gone)).toBe('not_moved');
  // Another file (new inode, or same inode number with another mtime) at the destination is not the moved one.
  expect(classifyEntry(planned, gone, { ...entry, ino: 43 })).toBe('unknown');
  expect(classifyEntry(planned, gone, { ...entry, mtimeMs: 2000 })).toBe('unknown');
  expect(classifyEntry(planned, gone, gone)).toBe('unknown');
  expect(classifyEntry(planned, entry, { ...entry, ino: 7 })).toBe('unknown');
  // A file under both names (a move cut between its link and its unlink); a folder never is.
  expect(classifyEntry(planned, entry, entry)).toBe('linked');
  expect(classifyEntry({ ...planned, type: 'directory' }, { ...entry, type: 'directory' }, { ...entry, type: 'directory' })).toBe('unknown');
});

describe('the journal', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'airlock-journal-'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  test('records are appended as versioned lines and read back in order; a record that is not a bulk-move record is an error', async () => {
    const journal = createCallJournal(dir, 'abc123');
    await journal.append({ schemaVersion: 1, step: 'plan', digest: 'd', entries: [planned] });
    await journal.append({ schemaVersion: 1, step: 'moving', index: 0 });
    await journal.append({ schemaVersion: 1, step: 'moved', index: 0 });
    const lines = readFileSync(journalFile(dir, 'abc123'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l.schemaVersion)).toEqual([1, 1, 1]);
    const view = readJournal(await journal.read());
    expect(view.plan?.entries).toEqual([planned]);
    expect([...view.moving]).toEqual([0]);
    expect([...view.moved]).toEqual([0]);
    expect(() => readJournal([{ schemaVersion: 2, step: 'moved', index: 0 }])).toThrow(/^journal record 1 is not a bulk-move record/);
  });

  test('a line a crash cut short is left out, and the next record starts on a line of its own', async () => {
    const journal = createCallJournal(dir, 'torn');
    await journal.append({ schemaVersion: 1, step: 'moving', index: 0 });
    appendFileSync(journalFile(dir, 'torn'), '{"schemaVersion":1,"at":"x","record":{"st');
    expect(await journal.read()).toEqual([{ schemaVersion: 1, step: 'moving', index: 0 }]);
    await journal.append({ schemaVersion: 1, step: 'moved', index: 0 });
    expect(await journal.read()).toEqual([
      { schemaVersion: 1, step: 'moving', index: 0 },
      { schemaVersion: 1, step: 'moved', index: 0 },
    ]);
  });

  test('a damaged whole line stops the reader with the file and line named; keys that are not plain names are digested', async () => {
    writeFileSync(journalFile(dir, 'bad'), '{"schemaVersion":1,"at":"x","record":{}}\nnot json\n');
    await expect(createCallJournal(dir, 'bad').read()).rejects.toThrow(/the journal .*bad\.jsonl has an unreadable line 2/);
    expect(journalFile(dir, '../escape')).toMatch(/[0-9a-f]{64}\.jsonl$/);
    expect(await createCallJournal(dir, 'never-written').read()).toEqual([]);
  });
});

test('a rule about a place holds for a bulk move with any entry from or to it', () => {
  const snapshot = buildSnapshot(
    parseRulesDocument(
      {
        version: 1,
        rules: [{ id: 'secrets', version: 1, name: 'secrets', scope: { categories: ['file_change'] }, when: { arg: 'path', glob: '**/secrets{,/**}' }, action: 'request_approval' }],
      },
      'test',
    ),
    'test',
    { roots: [ROOT], judgeModel: 'none', judgeTimeoutMs: 1000 },
  );
  const decide = (moves: unknown) => {
    const c = call(moves);
    if (c.kind !== 'tool') throw new Error('not a tool call');
    const ctx: CallContext = { toolName: 'fs_move_many', category: c.category, args: c.args, scope: {}, targets: pathTargetsOf('fs_move_many', c.args) };
    return evaluateCall(snapshot, 'tool.before', ctx, {}, 0).decision;
  };
  expect(decide([{ from: 'a', to: 'b' }, { from: 'c', to: 'd' }])).toBe('allow');
  expect(decide([{ from: 'a', to: 'b' }, { from: 'secrets/key', to: 'public/key' }])).toBe('require_approval');
  expect(decide([{ from: 'a', to: 'b' }, { from: 'c', to: 'secrets' }])).toBe('require_approval');
});

test('the model is offered the list with its limit and what each field means', () => {
  const [spec] = toolSpecs(['fs_move_many']);
  const moves = (spec?.parameters.properties as Record<string, Record<string, unknown>> | undefined)?.moves;
  expect(moves).toMatchObject({ type: 'array', minItems: 1, maxItems: MAX_MOVES, items: { type: 'object', required: ['from', 'to'] } });
  expect(JSON.stringify(moves)).toContain('must not exist; its folder must');
});
