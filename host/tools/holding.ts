import { mkdirSync, statfsSync } from 'node:fs';
import type { UndoQuota } from '../../core/config/tools/tools-config';
import { humanSize } from '../../core/util/human-size';
import { lstat, readdir, rename, rm, unlink } from 'node:fs/promises';
import { HOLDING_FOLDER } from '../../core/tools/fs/holding-folder';
import type { HeldPlace, KeptChange } from '../../core/tools/capabilities/files';
import { z } from 'zod';
import { ToolRefusal } from '../../core/tools/tool-refusal';
import { heldUntil, type HoldSlot, type Reversibility } from '../../core/tools/undo';
import type { UndoRecords } from '../nonces/undo-records';
import { errnoCode, fstatFd, O_CREAT, O_DIRECTORY, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_PATH, O_RDONLY, O_WRONLY, openFd, procPath, readAt, release, writeAll } from './descriptors';
import { modeText } from './observe';
import { openRoot, type Pinned } from './pinned-path';

/**
 * Where reversible changes keep what they replace: `<root>/.airlock-undo/
 * <key>/held`, the key being the call's grant nonce. A delete is a rename
 * into it, atomic and on the same file system, so a kill leaves the entry
 * in one place or the other, with its inode, content and mode; no tool can
 * reach the folder (pinned-path.ts refuses the name in a root).
 */

/** The tools config's `undo`: the roots (real paths) whose changes are kept, for how long, and how much each may keep. */
export interface UndoSettings {
  readonly roots: readonly string[];
  readonly keepDays: number;
  /** Absent: the smaller of 10 % of the root's file system and 20 GiB. */
  readonly quota?: UndoQuota;
}

const DEFAULT_QUOTA_BYTES = 20 * 1024 ** 3;
const DEFAULT_QUOTA_PERCENT = 10;

/** The most a root may keep for undo at once, in bytes. */
export function quotaBytes(root: string, quota: UndoQuota | undefined): number {
  if (quota?.bytes !== undefined) return quota.bytes;
  const fs = statfsSync(root);
  const share = (fs.blocks * fs.bsize * (quota?.percent ?? DEFAULT_QUOTA_PERCENT)) / 100;
  return quota === undefined ? Math.min(share, DEFAULT_QUOTA_BYTES) : share;
}

/**
 * Why keeping `bytes` more in the root would pass its quota (what its held
 * records keep, plus this); undefined while it fits, or when no record
 * store counts here. A size not known (a folder past the tree limits) is
 * never taken to fit.
 */
export async function overQuota(root: string, settings: UndoSettings, records: Pick<UndoRecords, 'heldBytes'> | undefined, bytes: number | undefined): Promise<string | undefined> {
  if (records === undefined) return undefined;
  if (bytes === undefined) return `its size is not known, so it cannot be counted against ${root}'s undo quota`;
  const held = await records.heldBytes(root);
  const limit = quotaBytes(root, settings.quota);
  if (held + bytes <= limit) return undefined;
  return `keeping ${humanSize(bytes)} more would pass ${root}'s undo quota (${humanSize(held)} kept of ${humanSize(limit)})`;
}

/** The name of the held entry inside a call's folder. */
export const HELD_NAME = 'held';

/** Whether a change of the pinned target can be kept for undo now. */
export function reversibilityOf(target: Pinned, settings: UndoSettings | undefined): Reversibility {
  if (settings === undefined || !settings.roots.includes(target.root)) return { reversible: false, why: `${target.root} is not set up for undo` };
  if (target.stats !== null) {
    const root = withRoot(target.root, (fd) => fstatFd(fd));
    // A rename cannot leave its file system: what is mounted below the root is not kept.
    if (target.stats.dev !== root.dev) return { reversible: false, why: `${target.path} is on another file system than ${target.root}` };
  }
  return { reversible: true, keepDays: settings.keepDays };
}

function withRoot<T>(root: string, use: (fd: number) => T): T {
  const fd = openRoot(root, HOLDING_FOLDER);
  try {
    return use(fd);
  } finally {
    release(fd);
  }
}

/** Creates the folder if it is not there (mode 0700: held entries are airlock's), then opens it, refusing a link in its place. */
function openFolder(path: string): number {
  try {
    mkdirSync(path, { mode: 0o700 });
  } catch (err) {
    if (errnoCode(err) !== 'EEXIST') throw err;
  }
  return openFd(path, O_PATH | O_DIRECTORY | O_NOFOLLOW);
}

/**
 * Moves the pinned entry into the call's holding folder. False when the
 * change cannot be kept and the reviewer was not promised it (the caller
 * then changes the entry for good, as without undo); a change promised
 * reversible refuses instead, having changed nothing.
 */
export async function holdEntry(target: Pinned, settings: UndoSettings | undefined, slot: HoldSlot, records?: Pick<UndoRecords, 'heldBytes'>): Promise<boolean> {
  const can = reversibilityOf(target, settings);
  if (!can.reversible) {
    if (slot.required) throw new ToolRefusal(`the approved change was to be reversible, but ${can.why}; nothing was changed`);
    return false;
  }
  // The quota was checked for the card; a change no card promised is kept only while it fits.
  if (!slot.required && settings !== undefined && (await overQuota(target.root, settings, records, slot.bytes)) !== undefined) return false;
  return withCallFolder(target.root, slot.key, async (own) => {
    const place = procPath(own, HELD_NAME);
    // A rename would replace a held file: the call's folder holds one entry, the first.
    if ((await lstat(place).catch(() => undefined)) !== undefined) throw new ToolRefusal(`this call already holds an entry for undo; nothing more was changed`);
    try {
      await rename(target.entryPath(), place);
    } catch (err) {
      // Same device number yet another mount (a bind mount, overlayfs): not kept; without a promise the delete goes on as before.
      if (errnoCode(err) !== 'EXDEV') throw err;
      if (slot.required) throw new ToolRefusal(`the approved change was to be reversible, but ${target.path} cannot be moved into ${target.root}'s holding folder (another mount); nothing was changed`);
      return false;
    }
    return true;
  });
}

/** Runs `use` on the call's own folder in the root's holding folder (both made if missing, mode 0700, opened without following a link), closing both after. */
async function withCallFolder<T>(root: string, key: string, use: (own: number) => Promise<T>): Promise<T> {
  const holding = withRoot(root, (fd) => openFolder(procPath(fd, HOLDING_FOLDER)));
  try {
    const own = openFolder(procPath(holding, key));
    try {
      return await use(own);
    } finally {
      release(own);
    }
  } finally {
    release(holding);
  }
}

/** The file in a call's folder that keeps what a mode change replaced: the mode it sets, on which inode (the mode before is in the record). */
export const MODE_NAME = 'mode.json';
const modeMarkerSchema = z.strictObject({ before: z.string().regex(/^[0-7]{3,4}$/), after: z.string().regex(/^[0-7]{3,4}$/), dev: z.number(), ino: z.number(), born: z.number().optional() });
type ModeMarker = z.infer<typeof modeMarkerSchema>;

/**
 * Before a mode change in a root set up for undo: writes what it will set,
 * on which inode, into the call's folder, so a kill after the change still
 * leaves its undo findable by the nonce. False when it cannot be kept and
 * nothing was promised (the change goes on without undo); a promised one
 * refuses instead, having changed nothing.
 */
export async function holdMode(target: Pinned, settings: UndoSettings | undefined, slot: HoldSlot, after: string): Promise<boolean> {
  const can = reversibilityOf(target, settings);
  if (!can.reversible || target.stats === null) {
    if (slot.required) throw new ToolRefusal(`the approved change was to be reversible, but ${can.reversible ? `${target.path} is not there` : can.why}; nothing was changed`);
    return false;
  }
  const stats = target.stats;
  return withCallFolder(target.root, slot.key, async (own) => {
    // The mode before is the pinned inode's own, the one the chmod will change.
    const marker: ModeMarker = {
      before: modeText(stats),
      after,
      dev: stats.dev,
      ino: stats.ino,
      ...(stats.birthtimeMs > 0 ? { born: stats.birthtimeMs } : {}),
    };
    const path = procPath(own, MODE_NAME);
    const kept = await keptIn(procPath(own));
    if (kept?.kind === 'mode') {
      // A retry of a call killed after keeping its mode: the same change on the same inode goes on; another is refused.
      if (kept.after === marker.after && kept.dev === marker.dev && kept.ino === marker.ino && kept.born === marker.born) return true;
      throw new ToolRefusal('this call already kept a mode for another change; nothing more was changed');
    }
    // A file cut short by a kill is written again.
    await unlink(path).catch(() => undefined);
    const fd = openFd(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600);
    try {
      await writeAll(fd, Buffer.from(JSON.stringify(marker)));
    } finally {
      release(fd);
    }
    return true;
  });
}

/** A root's holding folder, opened without following a link (undefined when there is none, or something else is in its place). */
export function openHolding(root: string): number | undefined {
  try {
    return withRoot(root, (fd) => openFd(procPath(fd, HOLDING_FOLDER), O_PATH | O_DIRECTORY | O_NOFOLLOW));
  } catch {
    return undefined;
  }
}

/** What a call holds in any of the undo roots: found by its key, for the record a crash may have left unwritten. */
export async function findHeld(settings: UndoSettings | undefined, key: string): Promise<HeldPlace | undefined> {
  if (settings === undefined || !KEY.test(key)) return undefined;
  for (const root of settings.roots) {
    const holding = openHolding(root);
    if (holding === undefined) continue;
    try {
      const kept = await keptIn(procPath(holding, key));
      if (kept !== undefined) return { root, keepDays: settings.keepDays, change: kept };
    } finally {
      release(holding);
    }
  }
  return undefined;
}

/** A mode change that did not happen (its chmod failed): what it kept goes, so nothing offers to undo it. */
export async function dropMode(root: string, key: string): Promise<void> {
  const holding = openHolding(root);
  if (holding === undefined) return;
  try {
    const own = openFd(procPath(holding, key), O_PATH | O_DIRECTORY | O_NOFOLLOW);
    try {
      await unlink(procPath(own, MODE_NAME)).catch(() => undefined);
    } finally {
      release(own);
    }
  } catch {
    // No folder of the call: nothing kept.
  } finally {
    release(holding);
  }
}

/** What a call's folder keeps: an entry moved aside, or the mode a change set; undefined when neither (or the mode file is cut short). */
async function keptIn(folder: string): Promise<KeptChange | undefined> {
  const held = await lstat(`${folder}/${HELD_NAME}`).catch(() => undefined);
  // Its birth time (a rename keeps it) tells it apart from an entry made later under a reused inode number.
  if (held !== undefined) return held.birthtimeMs > 0 ? { kind: 'moved_aside', born: held.birthtimeMs } : { kind: 'moved_aside' };
  const text = await readFileNoFollow(`${folder}/${MODE_NAME}`);
  if (text === undefined) return undefined;
  try {
    const marker = modeMarkerSchema.safeParse(JSON.parse(text));
    return marker.success ? { kind: 'mode', ...marker.data } : undefined;
  } catch {
    return undefined;
  }
}

/** A small file's text, never through a link; undefined when it is not there. */
async function readFileNoFollow(path: string): Promise<string | undefined> {
  let fd: number;
  try {
    fd = openFd(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  } catch {
    return undefined;
  }
  try {
    const buffer = Buffer.alloc(4096);
    const n = await readAt(fd, buffer);
    return buffer.subarray(0, n).toString('utf8');
  } finally {
    release(fd);
  }
}

/**
 * Retention: held entries whose undo time is over go, with their records
 * marked purged — only in this worker's roots (on a machine of several,
 * each purges its own), and only once they are past their time by longer
 * than an undo may run: an undo that found its record in time has put the
 * entry back before the purge looks at it. The record is settled first; a crash
 * after settling leaves a folder no record holds, which the sweep after
 * removes. The holding folder is opened from the root without following a
 * link, and everything below is named through that descriptor: a link
 * planted in its place leads the purge nowhere.
 */
export async function purgeExpiredHolds(settings: UndoSettings | undefined, records: UndoRecords, now: number): Promise<number> {
  if (settings === undefined) return 0;
  let purged = 0;
  // A grace past expiry: an undo checked just before it (and running at most an activity's time) never races the purge.
  for (const record of await records.expiredUndo(now - PURGE_GRACE_MS, 500)) {
    if (!settings.roots.includes(record.root)) continue;
    if (await records.settleUndo(record.nonce, 'purged')) purged++;
  }
  for (const root of settings.roots) {
    const holding = openHolding(root);
    if (holding === undefined) continue;
    try {
      for (const name of await readdir(procPath(holding)).catch(() => [] as string[])) {
        if (KEY.test(name) && (await leftover(records, procPath(holding, name), name, settings.keepDays, now))) {
          await rm(procPath(holding, name), { recursive: true, force: true });
        }
      }
    } finally {
      release(holding);
    }
  }
  return purged;
}

/**
 * Whether a call's folder is no longer anyone's: its record purged or
 * restored; or, without a record (a crash between the move and the record,
 * and no retry came), an entry held longer than the undo time from when it
 * was moved in, or a folder left empty for an hour.
 */
async function leftover(records: UndoRecords, folder: string, key: string, keepDays: number, now: number): Promise<boolean> {
  const record = await records.undoRecord(key);
  if (record !== undefined) return record.state !== 'held';
  const info = await lstat(folder).catch(() => undefined);
  if (info === undefined || !info.isDirectory()) return false;
  const holdsEntry = (await keptIn(folder)) !== undefined;
  return now > (holdsEntry ? heldUntil(info.mtimeMs, keepDays) : info.mtimeMs + LEFTOVER_AGE_MS);
}

const KEY = /^[0-9a-f]{32}$/;

/** Longer than `execute` may run (10 minutes): an undo that found the record in its time has finished before the purge may start. */
const PURGE_GRACE_MS = 15 * 60 * 1000;

/** An empty call folder without a record is left this long: its call may still be moving its entry in. */
const LEFTOVER_AGE_MS = 60 * 60 * 1000;
