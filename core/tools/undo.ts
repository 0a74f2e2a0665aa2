import { z } from 'zod';
import type { Move } from './fs/move-plan';

/**
 * Whether an approved change can be taken back with `airlock undo`,
 * decided on the tools side before the reviewer approves (the card says
 * it) and honoured when the call runs: a change promised reversible is
 * refused rather than run without its undo.
 */
export const reversibilitySchema = z.discriminatedUnion('reversible', [
  /** The changed entry is kept in its root's holding folder for `keepDays` after the call runs. */
  z.strictObject({ reversible: z.literal(true), keepDays: z.number().int().positive() }),
  /** Why not, in words a card can end with: "its folder is not set up for undo". `byRule`: a rule chose it (the change then keeps nothing, even where it could). */
  z.strictObject({ reversible: z.literal(false), why: z.string(), byRule: z.string().optional() }),
]);
export type Reversibility = z.infer<typeof reversibilitySchema>;

/** What a change keeps for undo, for asking whether it can: the entry moved aside (a delete), the file replaced (an overwrite), its length before `adds` more bytes (an append), its mode, a move to `to`, or a bulk move. */
export type KeptKind =
  | { readonly kind: 'move_aside' }
  | { readonly kind: 'replace' }
  | { readonly kind: 'append'; readonly adds: number }
  | { readonly kind: 'mode' }
  | { readonly kind: 'move'; readonly to: string }
  | { readonly kind: 'move_many'; readonly moves: readonly Move[] };

/** When an entry held at `heldAtMs` may be purged: its undo time is over. */
export function heldUntil(heldAtMs: number, keepDays: number): number {
  return heldAtMs + keepDays * 86_400_000;
}

/**
 * Only inside `execute`, scoped to the call being run: where a reversible
 * change keeps what it replaces (`<root>/.airlock-undo/<key>/`, the key
 * being the grant's nonce) and whether the reviewer was promised it.
 */
export interface HoldSlot {
  readonly key: string;
  /** The approved card said "reversible": a change that cannot keep its undo refuses instead of running. */
  readonly required: boolean;
  /** What the change would keep, when known from the state observed right before it: a change no card promised is kept only within the root's quota. */
  readonly bytes?: number;
}

/** A change `fs_undo` takes back: the call that made it, and the path it changed as that call named it (the record keeps only its digest). */
export interface UndoOneTarget {
  readonly job: string;
  readonly call: string;
  readonly path: string;
  /** For a move: its destination as that call named it, where the entry is now (`path` is where it came from). */
  readonly to?: string;
}

/** A bulk move `fs_undo` takes back: the call that made it, and its whole list of moves as that call named them (the record keeps their digests). */
export interface UndoManyTarget {
  readonly job: string;
  readonly call: string;
  readonly moves: readonly Move[];
}

export type UndoTarget = UndoOneTarget | UndoManyTarget;

export const isUndoMany = (t: UndoTarget): t is UndoManyTarget => 'moves' in t;

/** What an undo would put back, or why it cannot; checked on the tools side before the reviewer sees the card, and again when it runs. */
export type Undoable =
  | {
      readonly ok: true;
      /** A set: the entries a bulk move moved (`bytes` and `files` in total). */
      readonly type: 'file' | 'directory' | 'set';
      readonly bytes: number;
      /** Files below a folder; null for a file. */
      readonly files: number | null;
      /** A set: how many of the call's entries it moved (the undo moves back those). */
      readonly entries?: number;
      /** ISO 8601: when the entry was moved aside, and when its undo time ends. */
      readonly heldAt: string;
      readonly expiresAt: string;
    }
  | { readonly ok: false; readonly reason: string };

/** The `fs_undo` arguments that take back a call's change: what an undo job submits, and what `airlock undo` signs only if the parked request is exactly it. */
export function undoArgs(call: {
  readonly jobId: string;
  readonly callId: string;
  readonly path: string;
  readonly to?: string | undefined;
  readonly moves?: readonly Move[] | undefined;
}): UndoTarget {
  if (call.moves !== undefined) return { job: call.jobId, call: call.callId, moves: call.moves.map((m) => ({ from: m.from, to: m.to })) };
  return { job: call.jobId, call: call.callId, path: call.path, ...(call.to !== undefined ? { to: call.to } : {}) };
}
