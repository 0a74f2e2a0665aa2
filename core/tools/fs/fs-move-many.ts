import { z } from 'zod';
import type { FileCapability } from '../capabilities/files';
import type { JournalCapability } from '../capabilities/journal';
import { type FileState, type SubjectState, describeChanges, isFileState } from '../observed-state';
import type { Prepared, RevalidateVerdict } from '../tool-module';
import { defineTool } from '../tool-module';
import { ToolRefusal } from '../tool-refusal';
import type { HoldSlot } from '../undo';
import { pathArg } from './file-targets';
import { type EntryStatus, MAX_MOVES, type Move, type MoveRecord, type PlannedEntry, classifyEntry, moveListProblems, readJournal } from './move-plan';
import { type SetObservation, contentDigest, observeSet } from './move-set';

/** Entries the reviewer sees by name; the rest are counted. */
const SHOWN_ENTRIES = 5;
/** Entries named in the model's report per status. */
const LISTED_ENTRIES = 20;

const moveSchema = z.strictObject({
  from: pathArg.describe('What to move; relative paths start at the first allowed root.'),
  to: pathArg.describe('Its new path (must not exist; its folder must).'),
});

const parameters = z.strictObject({
  moves: z
    .array(moveSchema)
    .min(1, 'give at least one move')
    .max(MAX_MOVES, `at most ${MAX_MOVES} moves in one call; split the list`)
    .superRefine((moves, ctx) => {
      // Too few or too many is said once, by min and max.
      if (moves.length === 0 || moves.length > MAX_MOVES) return;
      for (const problem of moveListProblems(moves).slice(0, 3)) ctx.addIssue({ code: 'custom', message: problem });
    })
    .describe('The moves, each from → to; no two may share or contain a path, and no destination may be another move\'s source.'),
});
type Args = z.output<typeof parameters>;

const setName = (count: number) => `${count} ${count === 1 ? 'move' : 'moves'}`;

/** The set as one observed state: count, total size, digest, and the first entries for the reviewer. */
function subjectOf(moves: readonly Move[], seen: SetObservation): SubjectState {
  const first = moves
    .slice(0, SHOWN_ENTRIES)
    .map((m) => `${m.from} → ${m.to}`)
    .join('; ');
  const more = moves.length > SHOWN_ENTRIES ? ` (and ${moves.length - SHOWN_ENTRIES} more)` : '';
  return {
    kind: 'subject',
    subject: setName(moves.length),
    exists: true,
    identity: seen.digest,
    summary: `${moves.length} ${moves.length === 1 ? 'entry' : 'entries'}, ${seen.bytes} bytes in total, digest ${seen.digest.slice(0, 16)}…: ${first}${more}`,
    facts: { count: moves.length, bytes: seen.bytes, digest: seen.digest },
  };
}

function problemText(problems: readonly string[]): string {
  const shown = problems.slice(0, 3).join('; ');
  return problems.length > 3 ? `${shown} (and ${problems.length - 3} more problems)` : shown;
}

async function journalOf(journal: JournalCapability | undefined) {
  return journal === undefined ? undefined : readJournal(await journal.read());
}

function record(journal: JournalCapability, r: MoveRecord): Promise<void> {
  return journal.append(r);
}

function plannedOf(move: Move, s: FileState): PlannedEntry {
  if (!s.exists || s.type === 'symlink') throw new ToolRefusal(`${move.from} is not a file or folder that can be moved`);
  // What an undo compares before it moves the entry back.
  const tree = s.type === 'directory' && s.tree?.complete === true ? s.tree : undefined;
  const below = tree !== undefined ? { bytes: tree.bytes, files: tree.files ?? null } : {};
  return { from: move.from, to: move.to, type: s.type, dev: s.dev, ino: s.ino, size: s.size, mtimeMs: s.mtimeMs, mode: s.mode, digest: contentDigest(s), ...below, ...(s.links !== undefined ? { links: s.links } : {}) };
}

/** Keeps the set for undo before the first move, where the call may keep it; the words the report ends with. */
async function hold(host: { readonly files: FileCapability; readonly hold?: HoldSlot }, moves: readonly Move[]): Promise<string> {
  if (host.hold === undefined || !(await host.files.holdMoves(moves, host.hold))) return '';
  return ' (kept for undo: airlock undo moves them back)';
}

/** The plan with each source's birth time, which the undo of a kept set compares (an entry made later under the same inode number is not the one moved). */
async function dated(files: FileCapability, plan: readonly PlannedEntry[]): Promise<PlannedEntry[]> {
  const born = await files.birthTimes(plan.map((e) => e.from));
  return plan.map((e, i) => {
    const at = born[i];
    return at === null || at === undefined ? e : { ...e, born: at };
  });
}

async function statusOf(files: FileCapability, entry: PlannedEntry): Promise<EntryStatus> {
  try {
    const source = await files.observe(entry.from, { follow: false, hash: false });
    const destination = await files.observe(entry.to, { follow: false, hash: false });
    return classifyEntry(entry, source, destination);
  } catch {
    // Cannot be observed now (a folder on its way swapped for a link out of the roots): neither moved nor as planned, and the others are still settled.
    return 'unknown';
  }
}

/**
 * Every planned entry after an interruption, from the journal and the file
 * system. An entry the journal records as moved must show it; one it shows
 * as being moved may be either; one it never started must be untouched.
 */
async function classifyAll(files: FileCapability, plan: readonly PlannedEntry[], journal: { moving: ReadonlySet<number>; moved: ReadonlySet<number> }): Promise<EntryStatus[]> {
  const out: EntryStatus[] = [];
  for (const [i, entry] of plan.entries()) {
    const fs = await statusOf(files, entry);
    if (journal.moved.has(i)) out.push(fs === 'moved' ? 'moved' : 'unknown');
    // Under both names only while being moved: a kill between its link and its unlink.
    else if (journal.moving.has(i)) out.push(fs);
    else out.push(fs === 'not_moved' ? 'not_moved' : 'unknown');
  }
  return out;
}

function listed(plan: readonly PlannedEntry[], indices: readonly number[]): string {
  const names = indices.slice(0, LISTED_ENTRIES).map((i) => `${plan[i]?.from ?? '?'} → ${plan[i]?.to ?? '?'}`);
  return indices.length > LISTED_ENTRIES ? `${names.join('; ')} (and ${indices.length - LISTED_ENTRIES} more)` : names.join('; ');
}

/** Renames the given entries in order, each between a `moving` and a `moved` record; stops at the first that fails. */
async function moveEntries(files: FileCapability, journal: JournalCapability, plan: readonly PlannedEntry[], todo: readonly number[]) {
  const moved: number[] = [];
  for (const [k, i] of todo.entries()) {
    const entry = plan[i];
    if (entry === undefined) continue;
    await record(journal, { schemaVersion: 1, step: 'moving', index: i });
    // The very entry that was planned, checked right before its rename.
    const status = await statusOf(files, entry);
    const outcome = status === 'not_moved' ? await files.move(entry.from, entry.to, false) : { ok: false, output: `${entry.from} or ${entry.to} changed since the plan` };
    if (!outcome.ok) {
      await record(journal, { schemaVersion: 1, step: 'failed', index: i, reason: outcome.output });
      return { moved, failed: { index: i, reason: outcome.output }, skipped: todo.slice(k + 1) };
    }
    await record(journal, { schemaVersion: 1, step: 'moved', index: i });
    moved.push(i);
  }
  return { moved, failed: undefined, skipped: [] as number[] };
}

function report(plan: readonly PlannedEntry[], movedBefore: readonly number[], run: Awaited<ReturnType<typeof moveEntries>>, unknown: readonly number[]) {
  const total = plan.length;
  const movedCount = movedBefore.length + run.moved.length;
  const lines = [
    movedBefore.length === 0
      ? `moved ${movedCount} of ${total} ${total === 1 ? 'entry' : 'entries'}`
      : `moved ${movedCount} of ${total} entries: ${movedBefore.length} before an interruption, ${run.moved.length} now`,
  ];
  if (run.failed !== undefined) {
    const entry = plan[run.failed.index];
    lines.push(`stopped at ${entry?.from ?? '?'} → ${entry?.to ?? '?'}: ${run.failed.reason}`);
  }
  const notMoved = [...(run.failed !== undefined ? [run.failed.index] : []), ...run.skipped];
  if (notMoved.length > 0) lines.push(`not moved (${notMoved.length}): ${listed(plan, notMoved)}`);
  if (unknown.length > 0) lines.push(`left alone, neither moved nor as planned (${unknown.length}; check them): ${listed(plan, unknown)}`);
  return { ok: movedCount === total, output: lines.join('\n') };
}

function withKept(outcome: { ok: boolean; output: string }, kept: string): { ok: boolean; output: string } {
  if (kept === '') return outcome;
  const [first = '', ...rest] = outcome.output.split('\n');
  return { ...outcome, output: [`${first}${kept}`, ...rest].join('\n') };
}

export const fsMoveMany = defineTool({
  name: 'fs_move_many',
  description:
    'Move or rename many files or folders inside the allowed roots as one approved set, entry by entry; a crash resumes where it stopped. Destinations must not exist; nothing is copied across file systems.',
  category: 'file_change',
  risk: 'medium',
  needs: ['files'],
  parameters,
  targetFields: ['moves'],
  // A reviewer approves the set as observed: an edited list would be another set.
  editable: [],
  targets: (args: Args) => [setName(args.moves.length)],
  pathsOf: (args: Args) => args.moves.flatMap((m) => [m.from, m.to]),
  mapPaths: (args: Args, map) => ({ ...args, moves: args.moves.map((m) => ({ from: map(m.from), to: map(m.to) })) }),
  facts: (host, args) => host.files.facts(args.moves.flatMap((m) => [m.from, m.to])),

  async prepare(host, args): Promise<Prepared> {
    const seen = await observeSet(host.files, args.moves);
    const observed = [subjectOf(args.moves, seen)];
    if (seen.problems.length > 0) return { observed, problems: [{ kind: 'refused', reason: problemText(seen.problems) }] };
    // Reversible when every source and destination is in a folder set up for undo (nothing is set aside).
    const first = args.moves[0];
    const undo = first === undefined ? undefined : await host.files.reversibility(first.from, 0, { kind: 'move_many', moves: args.moves }).catch(() => undefined);
    return { observed, problems: [undefined], ...(undo !== undefined ? { undo } : {}) };
  },

  async revalidate(host, check): Promise<RevalidateVerdict> {
    // Resuming an interrupted run: the journal's plan pins every entry, and `execute` classifies each one.
    if ((await journalOf(host.journal))?.plan !== undefined) return { kind: 'ok' };
    const problem = check.now.problems[0];
    if (problem !== undefined) return { kind: 'changed', reason: problem.reason };
    const approved = check.approved[0];
    const now = check.now.observed[0];
    if (approved === undefined || now === undefined) return { kind: 'changed', reason: 'nothing records the set of moves as it was approved' };
    if (isFileState(approved) || approved.kind !== 'subject' || approved.identity !== (isFileState(now) || now.kind !== 'subject' ? undefined : now.identity)) {
      const changes = describeChanges(approved, now);
      return { kind: 'changed', reason: `the entries to move changed since they were approved: ${changes.join('; ') || 'digest differs'}` };
    }
    return { kind: 'ok' };
  },

  async execute(host, args, before) {
    const journal = host.journal;
    if (journal === undefined) throw new ToolRefusal('this tools worker keeps no journal, and a bulk move runs only with one');
    const view = await journalOf(journal);
    if (view?.plan === undefined) {
      const seen = await observeSet(host.files, args.moves);
      if (seen.problems.length > 0) throw new ToolRefusal(`nothing was moved: ${problemText(seen.problems)}`);
      const checked = before?.[0];
      if (checked !== undefined && (isFileState(checked) || checked.identity !== seen.digest)) {
        throw new ToolRefusal('nothing was moved: the entries changed between the check and the first move');
      }
      const planned = seen.entries.map((e) => plannedOf(e.move, e.source));
      const kept = await hold(host, args.moves);
      const plan = kept === '' ? planned : await dated(host.files, planned);
      await record(journal, { schemaVersion: 1, step: 'plan', digest: seen.digest, entries: plan });
      const run = await moveEntries(host.files, journal, plan, plan.map((_, i) => i));
      return withKept(report(plan, [], run, []), kept);
    }
    // An earlier attempt began: finish what it did not, once, and say exactly what moved when.
    const plan = view.plan.entries;
    const status = await classifyAll(host.files, plan, view);
    const movedBefore: number[] = [];
    const todo: number[] = [];
    const unknown: number[] = [];
    const linked: number[] = [];
    status.forEach((s, i) => (s === 'moved' ? movedBefore : s === 'not_moved' ? todo : s === 'linked' ? linked : unknown).push(i));
    // A file left under both names: its old name goes (only while it is still that file), and the move is done.
    for (const i of linked) {
      const entry = plan[i];
      if (entry !== undefined && (await host.files.dropName(entry.from, { dev: entry.dev, ino: entry.ino }))) movedBefore.push(i);
      else unknown.push(i);
    }
    for (const i of movedBefore) if (!view.moved.has(i)) await record(journal, { schemaVersion: 1, step: 'moved', index: i });
    // Kept as the first attempt kept it (a reconciliation that found nothing moved yet may have let it go).
    const kept = await hold(host, args.moves).catch((err: unknown) => {
      // Promised reversible and no longer keepable: nothing more moves, and the refusal says what had.
      if (err instanceof ToolRefusal && movedBefore.length > 0) {
        throw new ToolRefusal(`${movedBefore.length} of ${plan.length} entries had moved before an interruption, and no more were moved: ${err.message.replace(/; nothing was changed$/, '')}`);
      }
      throw err;
    });
    const run = await moveEntries(host.files, journal, plan, todo);
    return withKept(report(plan, movedBefore, run, unknown), kept);
  },

  async postcondition(host) {
    const view = await journalOf(host.journal);
    if (view === undefined) return { present: false, detail: 'this tools worker keeps no journal of bulk moves' };
    if (view.plan === undefined) return { present: false, detail: 'the journal records no move of this call, so none was made' };
    const status = await classifyAll(host.files, view.plan.entries, view);
    const count = (s: EntryStatus) => status.filter((x) => x === s).length;
    const total = view.plan.entries.length;
    if (count('moved') === total) return { present: true, detail: `all ${total} entries are at their destinations (same inode) and their sources are gone` };
    return { present: false, detail: `${count('moved')} of ${total} entries moved, ${count('not_moved')} not moved, ${count('linked')} under both names, ${count('unknown')} neither` };
  },
});
