import { z } from 'zod';
import { isInside, normalizePosix, resolvePosix } from '../../util/posix-path';
import { sha256Hex } from '../../util/sha256';

/**
 * What `fs_move_many` checks of a list of moves before it touches
 * anything, and the records its journal holds. Pure: the paths given are
 * compared as text (canonical absolute paths once the gate has them).
 */

/** Moves in one call at most: the reviewer approves the set, and a crash resumes it entry by entry. */
export const MAX_MOVES = 1000;

export interface Move {
  readonly from: string;
  readonly to: string;
}

/** The first problems of a list of moves, one sentence each; empty when it can run. */
export function moveListProblems(moves: readonly Move[], max = MAX_MOVES): string[] {
  if (moves.length === 0) return ['the list of moves is empty'];
  if (moves.length > max) return [`${moves.length} moves are more than the ${max} allowed in one call; split the list`];
  const problems: string[] = [];
  const norm = moves.map((m) => ({ from: normalizePosix(m.from), to: normalizePosix(m.to) }));
  const sources = new Map<string, number>();
  const destinations = new Map<string, number>();
  norm.forEach((m, i) => {
    if (m.from === m.to) problems.push(`entry ${i + 1} moves ${m.from} onto itself`);
    else if (isInside(m.from, m.to)) problems.push(`entry ${i + 1} moves ${m.from} into itself (${m.to})`);
    const s = sources.get(m.from);
    if (s !== undefined) problems.push(`entries ${s + 1} and ${i + 1} both move ${m.from}`);
    else sources.set(m.from, i);
    const d = destinations.get(m.to);
    if (d !== undefined) problems.push(`entries ${d + 1} and ${i + 1} both move to ${m.to}`);
    else destinations.set(m.to, i);
  });
  // A chain (a → b, b → c) or an overlap (a folder and something inside it) depends on the order of the moves: refused, never guessed.
  norm.forEach((m, i) => {
    const chained = sources.get(m.to);
    if (chained !== undefined && chained !== i) problems.push(`entry ${i + 1} moves to ${m.to}, which entry ${chained + 1} moves away (chained moves are refused; move in two calls)`);
  });
  const all = norm.flatMap((m, i) => [
    { path: m.from, i, role: 'source' },
    { path: m.to, i, role: 'destination' },
  ]);
  // Sorted, a path is followed by the paths inside it: each is compared with its neighbours only.
  all.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  for (let k = 0; k < all.length; k++) {
    const outer = all[k];
    if (outer === undefined) continue;
    for (let j = k + 1; j < all.length; j++) {
      const inner = all[j];
      if (inner === undefined || !isInside(outer.path, inner.path)) break;
      if (inner.path === outer.path || inner.i === outer.i) continue;
      problems.push(`the ${inner.role} of entry ${inner.i + 1} (${inner.path}) lies inside the ${outer.role} of entry ${outer.i + 1} (${outer.path}); overlapping moves are refused`);
    }
  }
  return [...new Set(problems)];
}

/** sha256 of a list of moves as canonical paths (relative ones taken from `base`, the first root): what a bulk move's undo names must match. */
export function movesDigest(moves: readonly Move[], base: string): string {
  return sha256Hex(JSON.stringify(moves.map((m) => [resolvePosix(base, m.from), resolvePosix(base, m.to)])));
}

/** What the journal knows of an entry's source as it was right before the first move: it is the same entry later only with this identity. */
export const plannedEntrySchema = z.strictObject({
  from: z.string(),
  to: z.string(),
  type: z.enum(['file', 'directory', 'other']),
  dev: z.number(),
  ino: z.number(),
  size: z.number(),
  mtimeMs: z.number(),
  /** What an undo compares before it moves the entry back (absent in journals before undo): its mode, a file's sha256 or a folder's tree digest (null past the limits), and the bytes and files below a folder. */
  mode: z.string().optional(),
  digest: z.string().nullable().optional(),
  bytes: z.number().optional(),
  files: z.number().nullable().optional(),
  /** A file's names (hard links), when more than one: an undo refuses the entry once that count changed. */
  links: z.number().int().positive().optional(),
  /** Its birth time where the file system keeps one, for a set kept for undo: an entry made later under the same inode number is not it. */
  born: z.number().optional(),
});
export type PlannedEntry = z.infer<typeof plannedEntrySchema>;

/** One journal record of a bulk move: the plan first, then `moving`/`moved` around each rename. */
export const moveRecordSchema = z.discriminatedUnion('step', [
  z.strictObject({ schemaVersion: z.literal(1), step: z.literal('plan'), digest: z.string(), entries: z.array(plannedEntrySchema) }),
  z.strictObject({ schemaVersion: z.literal(1), step: z.literal('moving'), index: z.number().int().min(0) }),
  z.strictObject({ schemaVersion: z.literal(1), step: z.literal('moved'), index: z.number().int().min(0) }),
  z.strictObject({ schemaVersion: z.literal(1), step: z.literal('failed'), index: z.number().int().min(0), reason: z.string() }),
]);
export type MoveRecord = z.infer<typeof moveRecordSchema>;

export interface JournalView {
  readonly plan: Extract<MoveRecord, { step: 'plan' }> | undefined;
  readonly moving: ReadonlySet<number>;
  readonly moved: ReadonlySet<number>;
}

/** The journal's records, read back; a record that does not parse is an error, never skipped. */
export function readJournal(records: ReadonlyArray<Readonly<Record<string, unknown>>>): JournalView {
  let plan: JournalView['plan'];
  const moving = new Set<number>();
  const moved = new Set<number>();
  records.forEach((raw, n) => {
    const parsed = moveRecordSchema.safeParse(raw);
    if (!parsed.success) throw new Error(`journal record ${n + 1} is not a bulk-move record: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
    const r = parsed.data;
    if (r.step === 'plan') plan ??= r;
    else if (r.step === 'moving') moving.add(r.index);
    else if (r.step === 'moved') moved.add(r.index);
  });
  return { plan, moving, moved };
}

/** Where an entry stands after an interruption, from the journal and the file system; `linked`: a file under both names (a move cut between its link and its unlink). */
export type EntryStatus = 'moved' | 'not_moved' | 'linked' | 'unknown';

export interface SeenEntry {
  readonly exists: boolean;
  readonly dev?: number;
  readonly ino?: number;
  readonly type?: string;
  readonly mtimeMs?: number;
}

/**
 * Moved: the destination is the very entry (device, inode, type; a file
 * keeps its mtime too) and the source is gone. Not moved: the source is that
 * entry and the destination is absent. Linked: a file that is that entry
 * under both names. Anything else is unknown.
 */
export function classifyEntry(plan: PlannedEntry, source: SeenEntry, destination: SeenEntry): EntryStatus {
  const same = (s: SeenEntry) => s.exists && s.dev === plan.dev && s.ino === plan.ino && s.type === plan.type && (plan.type === 'directory' || s.mtimeMs === plan.mtimeMs);
  if (!source.exists && same(destination)) return 'moved';
  if (plan.type === 'file' && same(source) && same(destination)) return 'linked';
  if (!destination.exists && same(source)) return 'not_moved';
  return 'unknown';
}
