import { createHash } from 'node:crypto';
import { link, lstat, unlink } from 'node:fs/promises';
import { z } from 'zod';
import type { CutWrite } from '../../core/tools/capabilities/files';
import type { Move } from '../../core/tools/fs/move-plan';
import type { HoldSlot } from '../../core/tools/undo';
import { humanSize } from '../../core/util/human-size';
import { ToolRefusal } from '../../core/tools/tool-refusal';
import type { UndoRecords } from '../stores/nonces/undo-records';
import { BEFORE_NAME, keepMarker, MODE_NAME, MOVE_NAME, REPLACED_NAME, withCallFolder, WRITE_NAME } from './call-folder';
import { errnoCode, fstatFd, O_NONBLOCK, O_RDONLY, O_RDWR, openFd, procPath, release } from '../fs/descriptors';
import { completeFrom, copyAside, hashPrefix } from './kept-bytes';
import { modeText } from './observe';
import { withPinned, type Pinned } from '../fs/pinned-path';
import type { Roots } from '../fs/roots';
import { notKept, reversibilityOf, whyNotKept, type UndoSettings } from './undo-settings';

/**
 * Reversible changes that leave their entry where it is, and what each
 * keeps in its call's folder before it changes anything, so that a kill
 * right after the change still leaves its undo findable by the key:
 * - a mode change: `mode.json`, the mode it sets on which inode;
 * - an overwrite: `write.json` (the digest of what it writes, on which
 *   inode), then a copy
 *   of the content before (`before`, named only once complete); the file
 *   is then written in place as without undo, so its inode, owner,
 *   permissions, attributes and the programs that have it open stay (a
 *   write a kill cut short is finished by the retry: kept-bytes.ts);
 * - an append: `write.json`, the length before and the digest the file
 *   will have, on which inode (an undo cuts it back);
 * - a move: `move.json`, which inode it moves, and the file it replaces
 *   at its destination under a second name (`replaced`).
 * Each returns false when the change cannot be kept and nothing was
 * promised (the change then goes on as without undo); a promised one
 * refuses instead, having changed nothing.
 */

const octal = z.string().regex(/^[0-7]{3,4}$/);
const sha256 = z.string().regex(/^[0-9a-f]{64}$/);

const modeMarkerSchema = z.strictObject({ before: octal, after: octal, dev: z.number(), ino: z.number(), born: z.number().optional() });
type ModeMarker = z.infer<typeof modeMarkerSchema>;

const moveMarkerSchema = z.discriminatedUnion('kind', [
  z.strictObject({ kind: z.literal('moved'), dev: z.number(), ino: z.number(), born: z.number().optional() }),
  /** A bulk move: which entries moved, and what each was, is in the call's journal. */
  z.strictObject({ kind: z.literal('moved_many'), count: z.number().int().positive() }),
]);
type MoveMarker = z.infer<typeof moveMarkerSchema>;
export const moveMarkerOf = (value: unknown): MoveMarker | undefined => moveMarkerSchema.safeParse(value).data;

const writeMarkerSchema = z.discriminatedUnion('kind', [
  /** `dev`, `ino`, `born`: the file written in place (absent in markers before). */
  z.strictObject({ kind: z.literal('replaced'), after: sha256, bytes: z.number().int().nonnegative(), dev: z.number().optional(), ino: z.number().optional(), born: z.number().optional() }),
  z.strictObject({ kind: z.literal('appended'), size: z.number().int().nonnegative(), after: sha256, dev: z.number(), ino: z.number(), born: z.number().optional() }),
]);
type WriteMarker = z.infer<typeof writeMarkerSchema>;

export const modeMarkerOf = (value: unknown): ModeMarker | undefined => modeMarkerSchema.safeParse(value).data;
export const writeMarkerOf = (value: unknown): WriteMarker | undefined => writeMarkerSchema.safeParse(value).data;

const bornOf = (stats: { readonly birthtimeMs: number }) => (stats.birthtimeMs > 0 ? { born: stats.birthtimeMs } : {});

export async function holdMode(target: Pinned, settings: UndoSettings | undefined, slot: HoldSlot, after: string): Promise<boolean> {
  const why = await whyNotKept(target, settings, slot);
  const stats = target.stats;
  if (why !== undefined || stats === null) return notKept(slot, why ?? `${target.path} is not there`);
  // The mode before is the pinned inode's own, the one the chmod will change.
  const marker: ModeMarker = { before: modeText(stats), after, dev: stats.dev, ino: stats.ino, ...bornOf(stats) };
  // A retry of a call killed after keeping its mode: the same change on the same inode goes on.
  const same = (kept: ModeMarker) => kept.after === marker.after && kept.dev === marker.dev && kept.ino === marker.ino && kept.born === marker.born;
  await withCallFolder(target.root, slot.key, (own) => keepMarker(own, MODE_NAME, marker, modeMarkerOf, same));
  return true;
}

/** Why an overwrite of the entry cannot be kept: only a regular file's content is copied aside (the file is then written in place, as without undo). */
export function replaceable(target: Pinned): string | undefined {
  const stats = target.stats;
  return stats === null || !stats.isFile() ? `${target.path} is not a regular file` : undefined;
}

/**
 * Gives the pinned file a second name in the call's folder (the same
 * inode: nothing is copied), so a rename over its path leaves it kept.
 * A retry of the call finds the name already given to the same file.
 * False when the kernel refuses the link and nothing was promised.
 */
async function secondName(own: number, name: string, target: Pinned, stats: NonNullable<Pinned['stats']>, slot: HoldSlot): Promise<boolean> {
  const place = procPath(own, name);
  let linked = false;
  try {
    await link(target.entryPath(), place);
    linked = true;
  } catch (err) {
    // EEXIST: a retry of this call killed after keeping it (checked below to be the same file).
    if (errnoCode(err) !== 'EEXIST') return notKept(slot, `${target.path} cannot be given a second name in ${target.root}'s holding folder (${errnoCode(err) ?? 'error'})`);
  }
  const kept = await lstat(place);
  if (kept.dev !== stats.dev || kept.ino !== stats.ino) {
    if (linked) await unlink(place).catch(() => undefined);
    throw new ToolRefusal(`${target.path} was replaced while it was being changed; nothing was changed`);
  }
  return true;
}

export async function holdReplace(target: Pinned, settings: UndoSettings | undefined, slot: HoldSlot, content: Buffer, records?: Pick<UndoRecords, 'heldBytes'>): Promise<boolean> {
  const why = (await whyNotKept(target, settings, slot, records)) ?? replaceable(target);
  const stats = target.stats;
  if (why !== undefined || stats === null) return notKept(slot, why ?? `${target.path} is not there`);
  return withCallFolder(target.root, slot.key, async (own) => {
    // Which file is written in place: its undo writes back into that very file, never into another one at the path.
    const marker: WriteMarker = { kind: 'replaced', after: createHash('sha256').update(content).digest('hex'), bytes: content.length, dev: stats.dev, ino: stats.ino, ...bornOf(stats) };
    // A retry of the same write goes on (a marker an older build kept names no inode: the record's state before does).
    const same = (kept: WriteMarker) => kept.kind === 'replaced' && kept.after === marker.after && (kept.ino === undefined || (kept.dev === marker.dev && kept.ino === marker.ino));
    await keepMarker(own, WRITE_NAME, marker, writeMarkerOf, same);
    // The content before, copied whole (`before` appears only complete); the file itself is then written in place.
    const source = openFd(target.selfPath(), O_RDONLY | O_NONBLOCK);
    try {
      await copyAside(source, own, BEFORE_NAME, stats.size, target.path);
      if (fstatFd(source).size !== stats.size) throw new ToolRefusal(`${target.path} changed while its content was being kept; nothing was changed`);
    } catch (err) {
      // Nothing was changed: nothing is kept (a copy half made, on a full disk, goes too).
      for (const name of [BEFORE_NAME, WRITE_NAME]) await unlink(procPath(own, name)).catch(() => undefined);
      throw err;
    } finally {
      release(source);
    }
    return true;
  });
}

/** Why an append to the file cannot be kept: only a file whose whole content can be compared after it. */
export function appendable(target: Pinned, adds: number, hashLimitBytes: number): string | undefined {
  const stats = target.stats;
  if (stats === null || !stats.isFile()) return `${target.path} is not a regular file`;
  if (stats.size + adds > hashLimitBytes) return `${target.path} would be too large to compare after the append (over ${humanSize(hashLimitBytes)})`;
  return undefined;
}

/** sha256 of the file's first `size` bytes followed by `added`: what the append will leave. */
async function digestAfter(target: Pinned, size: number, added: Buffer): Promise<string> {
  const fd = openFd(target.selfPath(), O_RDONLY | O_NONBLOCK);
  try {
    return (await hashPrefix(fd, size)).update(added).digest('hex');
  } finally {
    release(fd);
  }
}

export async function holdAppend(target: Pinned, settings: UndoSettings | undefined, slot: HoldSlot, added: Buffer, hashLimitBytes: number): Promise<boolean> {
  const why = (await whyNotKept(target, settings, slot)) ?? appendable(target, added.length, hashLimitBytes);
  const stats = target.stats;
  if (why !== undefined || stats === null) return notKept(slot, why ?? `${target.path} is not there`);
  const marker: WriteMarker = { kind: 'appended', size: stats.size, after: await digestAfter(target, stats.size, added), dev: stats.dev, ino: stats.ino, ...bornOf(stats) };
  const same = (kept: WriteMarker) => kept.kind === 'appended' && kept.after === marker.after && kept.size === marker.size && kept.dev === marker.dev && kept.ino === marker.ino;
  await withCallFolder(target.root, slot.key, (own) => keepMarker(own, WRITE_NAME, marker, writeMarkerOf, same));
  return true;
}

/**
 * Before a move: the entry it moves, and the file it will replace at the
 * destination (a second name, in the source root's holding folder), so a
 * kill right after the rename still leaves its undo findable. Both roots
 * must be set up for undo.
 */
export async function holdMove(from: Pinned, to: Pinned, settings: UndoSettings | undefined, slot: HoldSlot, records?: Pick<UndoRecords, 'heldBytes'>): Promise<boolean> {
  const there = reversibilityOf(to, settings);
  const why = (await whyNotKept(from, settings, slot, records)) ?? (there.reversible ? undefined : there.why);
  const stats = from.stats;
  if (why !== undefined || stats === null) return notKept(slot, why ?? `${from.path} is not there`);
  return withCallFolder(from.root, slot.key, async (own) => {
    const marker = { kind: 'moved' as const, dev: stats.dev, ino: stats.ino, ...bornOf(stats) };
    await keepMarker<MoveMarker>(own, MOVE_NAME, marker, moveMarkerOf, (kept) => kept.kind === 'moved' && kept.dev === marker.dev && kept.ino === marker.ino && kept.born === marker.born);
    if (to.stats !== null && !(await secondName(own, REPLACED_NAME, to, to.stats, slot))) {
      await unlink(procPath(own, MOVE_NAME)).catch(() => undefined);
      return false;
    }
    return true;
  });
}

/**
 * Whether a bulk move can be kept for undo: every source and destination
 * in a root set up for undo on its file system and its own real place (no
 * link on the way), every source a file or a folder. The root of the first
 * source keeps its mark.
 */
export async function movesKeptIn(roots: Roots, moves: readonly Move[], settings: UndoSettings | undefined): Promise<{ readonly home: string } | { readonly why: string }> {
  let home: string | undefined;
  for (const [path, source] of moves.flatMap((m): Array<[string, boolean]> => [[m.from, true], [m.to, false]])) {
    const why = await withPinned(roots, path, { follow: false }, async (p) => {
      home ??= p.root;
      const can = reversibilityOf(p, settings);
      if (!can.reversible) return can.why;
      if (source && p.stats !== null && !p.stats.isFile() && !p.stats.isDirectory()) return `${p.path} is neither a file nor a folder`;
      // An alias through a link may lead elsewhere once another entry of the set has moved: every path must be its own real place.
      const at = roots.locate(roots.lexical(path));
      const written = at === undefined ? undefined : [at.root, ...at.parts].join('/');
      return written === p.path ? undefined : `${written ?? path} goes through a symbolic link (its real place is ${p.path}); a bulk move is kept for undo only when every path is its real place`;
    });
    if (why !== undefined) return { why };
  }
  return home === undefined ? { why: 'the list of moves is empty' } : { home };
}

/**
 * Before a bulk move: notes in the first source's root that the call's
 * moves are kept for undo (the journal says which moved and what each
 * was). Nothing is set aside, so no quota is asked.
 */
export async function holdMoveMany(roots: Roots, moves: readonly Move[], settings: UndoSettings | undefined, slot: HoldSlot): Promise<boolean> {
  const kept = await movesKeptIn(roots, moves, settings);
  if ('why' in kept) return notKept(slot, kept.why);
  const marker = { kind: 'moved_many' as const, count: moves.length };
  await withCallFolder(kept.home, slot.key, (own) => keepMarker<MoveMarker>(own, MOVE_NAME, marker, moveMarkerOf, (m) => m.kind === 'moved_many' && m.count === marker.count));
  return true;
}

/**
 * Finishes a write a kill cut short, as the retry of the approved call:
 * only when the file holds exactly what that write leaves part way (for an
 * overwrite, a prefix of the content; for an append, the bytes before, then
 * a prefix of the addition, at least one byte of it), the rest is written;
 * true once the file holds what the write meant. False, having written
 * nothing, for anything else.
 */
export async function finishCutWrite(target: Pinned, content: Buffer, cut: CutWrite): Promise<boolean> {
  if (target.stats === null || !target.stats.isFile()) return false;
  const fd = openFd(target.selfPath(), O_RDWR | O_NONBLOCK);
  try {
    if (cut.kind === 'overwrite') return await completeFrom(fd, { kind: 'buffer', bytes: content });
    const size = fstatFd(fd).size;
    if (size <= cut.size || size > cut.size + content.length) return false;
    if ((await hashPrefix(fd, cut.size)).digest('hex') !== cut.before) return false;
    return await completeFrom(fd, { kind: 'buffer', bytes: content }, cut.size);
  } finally {
    release(fd);
  }
}
