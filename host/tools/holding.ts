import { lstat, readdir, rename, rm } from 'node:fs/promises';
import type { HeldPlace, KeptChange } from '../../core/tools/capabilities/files';
import { ToolRefusal } from '../../core/tools/tool-refusal';
import { heldUntil, type HoldSlot } from '../../core/tools/undo';
import type { UndoRecords } from '../stores/nonces/undo-records';
import { BEFORE_NAME, clearCallFolder, HELD_NAME, MODE_NAME, MOVE_NAME, openHolding, readMarker, REPLACED_NAME, withCallFolder, WRITE_NAME, WRITING_NAME } from './call-folder';
import { errnoCode, procPath, release } from '../fs/descriptors';
import { modeText } from './observe';
import { modeMarkerOf, moveMarkerOf, writeMarkerOf } from './hold-changes';
import type { Pinned } from '../fs/pinned-path';
import { notKept, whyNotKept, type UndoSettings } from './undo-settings';

/**
 * Where reversible changes keep what they replace: `<root>/.airlock-undo/
 * <key>/`, the key being the call's grant nonce. A delete is a rename
 * into it, atomic and on the same file system, so a kill leaves the entry
 * in one place or the other, with its inode, content and mode; no tool can
 * reach the folder (pinned-path.ts refuses the name in a root). Changes
 * that leave their entry in place keep a marker there (hold-changes.ts).
 */

/**
 * Moves the pinned entry into the call's holding folder. False when the
 * change cannot be kept and the reviewer was not promised it (the caller
 * then changes the entry for good, as without undo); a change promised
 * reversible refuses instead, having changed nothing.
 */
export async function holdEntry(target: Pinned, settings: UndoSettings | undefined, slot: HoldSlot, records?: Pick<UndoRecords, 'heldBytes'>): Promise<boolean> {
  const why = await whyNotKept(target, settings, slot, records);
  if (why !== undefined) return notKept(slot, why);
  return withCallFolder(target.root, slot.key, async (own) => {
    const place = procPath(own, HELD_NAME);
    // A rename would replace a held file: the call's folder holds one entry, the first.
    if ((await lstat(place).catch(() => undefined)) !== undefined) throw new ToolRefusal(`this call already holds an entry for undo; nothing more was changed`);
    try {
      await rename(target.entryPath(), place);
    } catch (err) {
      // Same device number yet another mount (a bind mount, overlayfs): not kept; without a promise the delete goes on as before.
      if (errnoCode(err) !== 'EXDEV') throw err;
      return notKept(slot, `${target.path} cannot be moved into ${target.root}'s holding folder (another mount)`);
    }
    return true;
  });
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

/**
 * A change found not to have happened, its entry still at its path (a
 * move killed between keeping the file it would replace and its rename):
 * what was kept and the markers go, so the file has one name again and
 * nothing offers to undo a change that was not made. An entry a
 * delete moved aside is never dropped here.
 */
export async function unhold(settings: UndoSettings | undefined, key: string): Promise<void> {
  if (settings === undefined || !KEY.test(key)) return;
  for (const root of settings.roots) await clearCallFolder(root, key, [BEFORE_NAME, `${BEFORE_NAME}.part`, REPLACED_NAME]);
}

/**
 * What a call's folder keeps: an entry moved aside; a copy of what an
 * overwrite replaced (with the digest of what it wrote); what an append added; the mode a change
 * set; or a move (with the file it replaced). Undefined when none (a marker cut short, an overwrite whose
 * old file was not kept yet).
 */
async function keptIn(folder: string): Promise<KeptChange | undefined> {
  const held = await lstat(`${folder}/${HELD_NAME}`).catch(() => undefined);
  // Its birth time (a rename keeps it) tells it apart from an entry made later under a reused inode number.
  if (held !== undefined) return held.birthtimeMs > 0 ? { kind: 'moved_aside', born: held.birthtimeMs } : { kind: 'moved_aside' };
  const write = await readMarker(folder, WRITE_NAME, writeMarkerOf);
  if (write !== undefined) {
    const writing = (await lstat(`${folder}/${WRITING_NAME}`).catch(() => undefined)) !== undefined;
    if (write.kind === 'appended') return { ...write, writing };
    // Kept only once its copy of the content before is complete.
    const before = await lstat(`${folder}/${BEFORE_NAME}`).catch(() => undefined);
    if (before === undefined) return undefined;
    const { bytes: _bytes, kind: _kind, ...file } = write;
    return { kind: 'replaced', ...file, writing };
  }
  const move = await readMarker(folder, MOVE_NAME, moveMarkerOf);
  if (move?.kind === 'moved_many') return move;
  if (move !== undefined) {
    const replaced = await lstat(`${folder}/${REPLACED_NAME}`).catch(() => undefined);
    const file = replaced === undefined ? null : { dev: replaced.dev, ino: replaced.ino, size: replaced.size, mode: modeText(replaced), ...(replaced.birthtimeMs > 0 ? { born: replaced.birthtimeMs } : {}) };
    return { ...move, replaced: file };
  }
  const mode = await readMarker(folder, MODE_NAME, modeMarkerOf);
  return mode === undefined ? undefined : { kind: 'mode', ...mode };
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
