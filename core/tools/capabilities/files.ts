import type { FileState } from '../observed-state';
import type { CallFacts } from '../facts';
import type { ToolOutcome } from '../outcome';
import type { Move } from '../fs/move-plan';
import type { HoldSlot, KeptKind, Reversibility, Undoable, UndoTarget } from '../undo';

/** Where a call's kept state is: the root whose holding folder keeps it, and what the change did. */
export interface HeldPlace {
  readonly root: string;
  readonly keepDays: number;
  readonly change: KeptChange;
}

/**
 * What a reversible change kept: the entry it moved aside; a copy of the
 * content an overwrite replaced (`after` the sha256 of what it wrote); the length of
 * a file before an append (`after` the sha256 the append leaves); or the
 * mode it replaced; or a move. `writing`: the write began changing the
 * file and did not finish (a kill cut it). `born` is a birth time where the file system keeps
 * one: an inode number is given again once a file is removed.
 */
export type KeptChange =
  | { readonly kind: 'moved_aside'; readonly born?: number }
  /** An overwrite in place, of the file `dev`, `ino` (absent in markers before). */
  | { readonly kind: 'replaced'; readonly after: string; readonly dev?: number; readonly ino?: number; readonly born?: number; readonly writing: boolean }
  | { readonly kind: 'appended'; readonly size: number; readonly after: string; readonly dev: number; readonly ino: number; readonly born?: number; readonly writing: boolean }
  | { readonly kind: 'mode'; readonly before: string; readonly after: string; readonly dev: number; readonly ino: number; readonly born?: number }
  /** A move of the entry (`dev`, `ino`); `replaced`: the file it replaced at its destination, kept under a second name, as it is. */
  | { readonly kind: 'moved'; readonly dev: number; readonly ino: number; readonly born?: number; readonly replaced: KeptFile | null }
  /** A bulk move of `count` entries: which moved, and what each was, is in the call's journal. */
  | { readonly kind: 'moved_many'; readonly count: number };

/** A kept file as its second name shows it: its inode, size, permission bits and birth time. */
export interface KeptFile {
  readonly dev: number;
  readonly ino: number;
  readonly size: number;
  readonly mode: string;
  readonly born?: number;
}

/** A write a kill may have cut: an overwrite, or an append to a file of `size` bytes whose sha256 was `before`. */
export type CutWrite = { readonly kind: 'overwrite' } | { readonly kind: 'append'; readonly size: number; readonly before: string };

/** What `contents` found at a path. */
export type FileContents =
  | { readonly kind: 'missing' }
  | { readonly kind: 'not_a_file' }
  | { readonly kind: 'file'; readonly size: number; readonly sha256: string | null; readonly text: string | null };

/**
 * The file system inside the configured roots, as the tools worker offers
 * it to tool modules. Every operation walks its path from a root by pinned
 * descriptors (no check-then-open by name, no escape through a link); it
 * throws `ToolRefusal` for what confinement refuses.
 */
export interface FileCapability {
  /** The roots as configured: relative paths in calls are taken from the first. */
  readonly roots: readonly string[];
  /**
   * What is at a path now. `follow` follows a final symbolic link (reads);
   * `deep` digests a folder's whole tree (what a reviewer approves);
   * `hash: false` skips file contents. A missing path is `exists: false`.
   */
  observe(path: string, options: { readonly follow: boolean; readonly deep?: boolean; readonly hash?: boolean }): Promise<FileState>;
  /** Real places, links on the way and current types of the paths, for policy before it decides (advisory). */
  facts(paths: readonly string[]): Promise<CallFacts>;
  list(path: string): Promise<ToolOutcome>;
  read(path: string, maxBytes: number): Promise<ToolOutcome>;
  stat(path: string): Promise<ToolOutcome>;
  /** With a hold slot, in a root set up for undo: an overwrite keeps the file it replaces, an append the length before. */
  write(path: string, content: string, mode: 'create' | 'overwrite' | 'append', hold?: HoldSlot): Promise<ToolOutcome>;
  /** With a hold slot, in roots set up for undo: a file it replaces is kept, and what it moved is noted for the move back. */
  move(from: string, to: string, overwrite: boolean, hold?: HoldSlot): Promise<ToolOutcome>;
  /** Before a bulk move, with a hold slot, in roots set up for undo: notes that its moves are kept for undo (false: not kept, and not promised). */
  holdMoves(moves: readonly Move[], hold: HoldSlot): Promise<boolean>;
  /**
   * When the entry at each path was born (ms), not following a final link;
   * null where the file system keeps no birth time or nothing is there. An
   * inode number is given again once a file is removed: a birth time tells
   * the entry a kept change names from one made later.
   */
  birthTimes(paths: readonly string[]): Promise<ReadonlyArray<number | null>>;
  /** With a hold slot, in a root set up for undo: moved into the root's holding folder instead of removed. */
  remove(path: string, recursive: boolean, hold?: HoldSlot): Promise<ToolOutcome>;
  /** Whether a change of the entry at `path` (what it keeps: `kind`, a delete's by default), keeping `bytes`, can be kept for undo now (its root set up for it, the same file system, within the root's quota). */
  reversibility(path: string, bytes?: number, kind?: KeptKind): Promise<Reversibility>;
  /** What a call holds under its key, in whichever root: what its change kept; undefined when it holds nothing. */
  held(key: string): Promise<HeldPlace | undefined>;
  /**
   * A write a kill cut short (see `CutWrite`): the rest written, only when
   * the file holds exactly what that write leaves part way; true once it
   * holds what the write meant.
   */
  finishWrite(path: string, content: string, cut: CutWrite): Promise<boolean>;
  /** Removes `path`, a name of a file that has another (a move cut between its link and its unlink), only while it is that very file (`dev`, `ino`); false, removing nothing, otherwise. */
  dropName(path: string, file: { readonly dev: number; readonly ino: number }): Promise<boolean>;
  /** A change found not to have happened (its entry still at its path): what its call kept for it goes, so nothing offers to undo it. */
  unhold(key: string): Promise<void>;
  /** What undoing the change would put back at its path, or why it cannot (no record, undone, expired, the path taken, the held entry changed). */
  undoable(target: UndoTarget): Promise<Undoable>;
  /** Puts the held entry back at its path (never over anything there), then marks its record restored; finishes one a crash interrupted. */
  restore(target: UndoTarget): Promise<ToolOutcome>;
  /** Whether the entry is back at its path and no longer held (a retry's postcondition); a restore found in place has its record marked. */
  restored(target: UndoTarget, options: { readonly pathWasFree: boolean }): Promise<{ readonly present: boolean; readonly detail: string }>;
  /** With a hold slot, in a root set up for undo: the mode it replaces is kept first, for undo. */
  chmod(path: string, mode: string, hold?: HoldSlot): Promise<ToolOutcome>;
  /**
   * A regular file's content as text, for a reviewer's diff (never for the
   * model: `read` is the tool's). `text` is null past `maxBytes` or when
   * the bytes are not UTF-8 text; `sha256` is of the bytes read.
   */
  contents(path: string, maxBytes: number): Promise<FileContents>;
  /** Whether the file holds exactly `before`'s bytes followed by `content`, read through its pinned descriptor. */
  appendedOnce(path: string, content: string, before: FileState): Promise<{ readonly present: boolean; readonly detail: string }>;
}
