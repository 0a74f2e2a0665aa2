import { z } from 'zod';

/**
 * What a reversible change keeps so `airlock undo` can take it back: what
 * it kept (in `<root>/.airlock-undo/<nonce>/`), where, and what the entry
 * was before. Kept in the nonce/outcome store beside the call's
 * nonce, so it survives crashes and every tools worker of the deployment
 * sees it. Like the nonce rows, a record keeps the changed path only as its
 * digest (a file name can be a secret): whoever undoes names the path from
 * the job's history, and it must match.
 */

/** The held entry as it was right before the change (what an undo puts back). */
export const heldEntrySchema = z.object({
  /** `set`: the entries a bulk move moved, `bytes` and `files` in total (each entry is in the change). */
  type: z.enum(['file', 'directory', 'set']),
  /** Bytes of a file, or of every file below a folder. */
  bytes: z.number().int().nonnegative(),
  /** Files below a folder; null for a file. */
  files: z.number().int().nonnegative().nullable(),
  /** sha256 of a file's content or a folder's tree digest, when it was known before the change. */
  digest: z.string().nullable(),
  /** Permission bits as octal digits, "644". */
  mode: z.string(),
  /** The entry's device and inode (a rename and a link keep both): what a restore a kill interrupted is recognised by (absent in records before). */
  dev: z.number().optional(),
  ino: z.number().optional(),
  /** A file's modification time (ms), which an undo of an overwrite gives it back (absent in records before). */
  mtimeMs: z.number().optional(),
  /**
   * The names a file had (hard links) right before the change, when more
   * than one; absent: one (a folder, or a record from before). An undo
   * refuses a file whose count has changed since: a name made since may lie
   * outside the roots, and writing through it would change a file there.
   */
  links: z.number().int().positive().optional(),
});
export type HeldEntry = z.infer<typeof heldEntrySchema>;

export const undoStates = ['held', 'restored', 'purged'] as const;
export type UndoState = (typeof undoStates)[number];

export const undoRecordSchema = z.object({
  schemaVersion: z.literal(1),
  /** The grant nonce of the change: the record's key and the holding folder's name. */
  nonce: z.string().regex(/^[0-9a-f]{32}$/),
  jobId: z.string(),
  callId: z.string(),
  toolName: z.string(),
  /** The root (its real path) whose holding folder keeps the entry: a configured folder, not a name from a call. */
  root: z.string(),
  /** `sha256:` digest of the changed path as the call named it. */
  pathDigest: z.string(),
  held: heldEntrySchema,
  /**
   * What the change did, which the undo takes back (absent in records
   * before other changes: moved aside). `born` is a birth time where the
   * file system tells it: an inode number is given again to a file made
   * after one is removed.
   * - moved_aside: the entry went into the holding folder (`held`);
   * - replaced: an overwrite wrote the file in place (the inode `held`
   *   names, born at `born`); a copy of its content before is kept
   *   (`before`), `after` is the sha256 of what was written;
   * - appended: bytes were added to the file (`dev`, `ino`); `size` is its
   *   length before, `after` the sha256 the append left;
   * - mode: its mode was changed to `after` on that very inode;
   * - moved: the entry (`held`, its state before) was moved to the path
   *   whose digest is `to`; `replaced` is the file the move replaced
   *   there, kept in the holding folder (`replaced`);
   * - moved_many: a bulk move of `count` entries, `list` the digest of its
   *   whole list of moves (canonical paths); `entries` are those that
   *   moved, each by its position in the call's list, the digests of its
   *   source and destination paths, and what it was before (`held`).
   */
  change: z
    .discriminatedUnion('kind', [
      z.object({ kind: z.literal('moved_aside'), born: z.number().optional() }),
      z.object({ kind: z.literal('replaced'), after: z.string(), born: z.number().optional() }),
      z.object({ kind: z.literal('appended'), size: z.number().int().nonnegative(), after: z.string(), dev: z.number(), ino: z.number(), born: z.number().optional() }),
      z.object({ kind: z.literal('mode'), before: z.string().optional(), after: z.string().regex(/^[0-7]{3,4}$/), dev: z.number(), ino: z.number(), born: z.number().optional() }),
      z.object({ kind: z.literal('moved'), to: z.string(), born: z.number().optional(), replaced: heldEntrySchema.extend({ born: z.number().optional() }).optional() }),
      z.object({
        kind: z.literal('moved_many'),
        count: z.number().int().positive(),
        list: z.string(),
        entries: z.array(z.object({ index: z.number().int().nonnegative(), from: z.string(), to: z.string(), held: heldEntrySchema, born: z.number().optional() })).min(1),
      }),
    ])
    .optional(),
  /** Bytes set aside in the holding folder, which count against the root's quota (absent in records before: what a delete moved aside). */
  asideBytes: z.number().int().nonnegative().optional(),
  /** ISO 8601, UTC. */
  heldAt: z.string(),
  /** After this, the held entry may be purged and the change can no longer be undone. */
  expiresAt: z.string(),
  state: z.enum(undoStates),
  /** When the state last changed from held (restored or purged); absent while held. */
  settledAt: z.string().optional(),
});
export type UndoRecord = z.infer<typeof undoRecordSchema>;

/** A stored record's JSON; one that does not parse is left out of every answer (an undo then refuses as "no record"). */
export function parseUndoRecord(text: string): UndoRecord | undefined {
  try {
    const parsed = undoRecordSchema.safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * A record as it is stored: checked as it will be read back (one that would
 * not parse would be lost to every undo), fields beyond the schema dropped
 * (so nothing but the path's digest is kept), and its times in forms that
 * sort: ISO 8601 in UTC for when it was held, ms for its expiry.
 */
export function storedUndo(record: UndoRecord): { record: UndoRecord; json: string; heldAt: string; expiresAt: number } {
  const parsed = undoRecordSchema.safeParse(record);
  const heldAt = Date.parse(record.heldAt);
  const expiresAt = Date.parse(record.expiresAt);
  if (!parsed.success || Number.isNaN(heldAt) || Number.isNaN(expiresAt)) {
    throw new Error(`the undo record of nonce ${record.nonce} is not one the store can keep: ${parsed.success ? 'its heldAt or expiresAt is not a time' : parsed.error.message}`);
  }
  return { record: parsed.data, json: JSON.stringify(parsed.data), heldAt: new Date(heldAt).toISOString(), expiresAt };
}

/** The records of rows that parse; a damaged row is left out, as if it were not there. */
export function undoRecordsOf(rows: ReadonlyArray<{ record: string }>): UndoRecord[] {
  return rows.flatMap((row) => parseUndoRecord(row.record) ?? []);
}

export interface UndoQuery {
  readonly jobId?: string;
  readonly state?: UndoState;
  /** Newest first; at most this many. */
  readonly limit: number;
}

/**
 * The undo records of a deployment. Implemented by both nonce stores
 * (SQLite and PostgreSQL) and run through the same conformance tests.
 */
export interface UndoRecords {
  /** Keeps a record unless one with its nonce exists (a retried or reconciled attempt records the same change once); whether this call stored it. */
  recordUndo(record: UndoRecord): Promise<boolean>;
  /**
   * Replaces what a held record keeps (a bulk move resumed after a crash
   * moved more than the record first said); its key, job, times and state
   * stay as stored. False when no record of that nonce is held.
   */
  reviseUndo(record: UndoRecord): Promise<boolean>;
  undoRecord(nonce: string): Promise<UndoRecord | undefined>;
  /** The newest record of one call of a job (however many records the job has). */
  undoRecordOfCall(jobId: string, callId: string): Promise<UndoRecord | undefined>;
  /** Records by job and state, newest first. */
  undoRecords(query: UndoQuery): Promise<UndoRecord[]>;
  /**
   * Moves a record from `held` to `restored` or `purged`, compare-and-set:
   * of any number of undos or purges of one record at once, exactly one
   * gets true.
   */
  settleUndo(nonce: string, to: Exclude<UndoState, 'held'>): Promise<boolean>;
  /** Held records whose expiry is before `now` (ms), oldest first, at most `limit`: what retention purges. */
  expiredUndo(now: number, limit: number): Promise<UndoRecord[]>;
  /** Bytes the held records of a root set aside in its holding folder (`asideBytes`; in records without it, a deleted entry's): what counts against its undo quota. */
  heldBytes(root: string): Promise<number>;
  /** Forgets records no longer held (restored or purged) whose undo time ended longer ago than this; how many. */
  pruneUndo(olderThanMs: number): Promise<number>;
}
