import { mkdirSync } from 'node:fs';
import { rmdir, unlink } from 'node:fs/promises';
import { HOLDING_FOLDER } from '../../core/tools/fs/holding-folder';
import { ToolRefusal } from '../../core/tools/tool-refusal';
import { errnoCode, fstatFd, O_CREAT, O_DIRECTORY, O_EXCL, O_NOFOLLOW, O_NONBLOCK, O_PATH, O_RDONLY, O_WRONLY, openFd, procPath, readAt, release, writeAll } from '../fs/descriptors';
import { openRoot } from '../fs/pinned-path';

/**
 * A call's own folder in its root's holding folder (`<root>/.airlock-undo/
 * <key>/`, mode 0700, the key being the call's grant nonce): where a
 * reversible change keeps what it replaces, and the small marker files
 * that say what it changed. Everything is opened from the root without
 * following a link.
 */

/** What a call's folder may hold: the entry a delete moved aside; a copy of the content an overwrite replaced; the file a move replaced (its inode, under a second name); the markers of a mode change, a write and a move. */
export const HELD_NAME = 'held';
export const BEFORE_NAME = 'before';
export const REPLACED_NAME = 'replaced';
export const MODE_NAME = 'mode.json';
export const WRITE_NAME = 'write.json';
export const MOVE_NAME = 'move.json';
/** Marks that a kept write began changing the file and has not finished: only then is a file holding part of what it writes taken for a write a kill cut. */
export const WRITING_NAME = 'writing';
/** Marks that an undo of an overwrite began writing the kept content back: a file holding part of it is then finished, never taken for someone's edit. */
export const UNDOING_NAME = 'undoing';

/** Runs `use` on the root's pinned descriptor (its holding folder is named from it). */
export function withRoot<T>(root: string, use: (fd: number) => T): T {
  const fd = openRoot(root, HOLDING_FOLDER);
  try {
    return use(fd);
  } finally {
    release(fd);
  }
}

/**
 * Why a folder opened for holding is not airlock's alone: another user
 * made it, or others may write in it (they could swap what is kept for
 * something of theirs, which an undo would then put back).
 */
function notOurs(fd: number): string | undefined {
  const stats = fstatFd(fd);
  const uid = process.geteuid?.();
  if (uid !== undefined && stats.uid !== uid) return `it belongs to user ${stats.uid}, not to the user airlock runs as (${uid})`;
  if ((stats.mode & 0o022) !== 0) return `others may write in it (mode ${(stats.mode & 0o777).toString(8)})`;
  return undefined;
}

/** A call's folder in an opened holding folder, without following a link, only when it is airlock's alone (else a ToolRefusal). */
export function openCallFolder(holding: number, key: string): number {
  return openOwn(procPath(holding, key), key);
}

/** Opens a folder of the holding folder without following a link, only when it is airlock's alone (else a ToolRefusal saying what to do). */
function openOwn(path: string, shown: string): number {
  const fd = openFd(path, O_PATH | O_DIRECTORY | O_NOFOLLOW);
  const why = notOurs(fd);
  if (why === undefined) return fd;
  release(fd);
  throw new ToolRefusal(`${shown} is not airlock's alone (${why}); nothing was kept or put back. Remove it or give it to airlock's user with mode 0700`);
}

/** Creates the folder if it is not there (mode 0700: held entries are airlock's), then opens it, refusing a link in its place or a folder not airlock's alone. */
function openFolder(path: string, shown: string): number {
  try {
    mkdirSync(path, { mode: 0o700 });
  } catch (err) {
    if (errnoCode(err) !== 'EEXIST') throw err;
  }
  return openOwn(path, shown);
}

/** Runs `use` on the call's own folder in the root's holding folder (both made if missing), closing both after. */
export async function withCallFolder<T>(root: string, key: string, use: (own: number) => Promise<T>): Promise<T> {
  const holding = withRoot(root, (fd) => openFolder(procPath(fd, HOLDING_FOLDER), `${root}/${HOLDING_FOLDER}`));
  try {
    const own = openFolder(procPath(holding, key), `${root}/${HOLDING_FOLDER}/${key}`);
    try {
      return await use(own);
    } finally {
      release(own);
    }
  } finally {
    release(holding);
  }
}

/** A root's holding folder, opened without following a link (undefined when there is none, something else is in its place, or it is not airlock's alone). */
export function openHolding(root: string): number | undefined {
  try {
    return withRoot(root, (fd) => openOwn(procPath(fd, HOLDING_FOLDER), `${root}/${HOLDING_FOLDER}`));
  } catch {
    return undefined;
  }
}

/** Runs `use` on an existing call folder (undefined when the root keeps none under the key). */
export async function inCallFolder<T>(root: string, key: string, use: (own: number) => Promise<T>): Promise<T | undefined> {
  const holding = openHolding(root);
  if (holding === undefined) return undefined;
  let own: number;
  try {
    own = openCallFolder(holding, key);
  } catch {
    release(holding);
    return undefined;
  }
  try {
    return await use(own);
  } finally {
    release(own);
    release(holding);
  }
}

/**
 * Empties the call's folder of what a change or its undo leaves once done
 * (its markers), then removes it if nothing else is left: a kept entry is
 * never removed here.
 */
export async function clearCallFolder(root: string, key: string, also: readonly string[] = []): Promise<void> {
  const holding = openHolding(root);
  if (holding === undefined) return;
  try {
    let own: number | undefined;
    try {
      own = openCallFolder(holding, key);
    } catch {
      // No folder of the call, or not airlock's alone: nothing in it is cleared.
    }
    if (own !== undefined) {
      try {
        for (const name of [MODE_NAME, WRITE_NAME, MOVE_NAME, WRITING_NAME, ...also]) await unlink(procPath(own, name)).catch(() => undefined);
      } finally {
        release(own);
      }
    }
    await rmdir(procPath(holding, key)).catch(() => undefined);
  } finally {
    release(holding);
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

/** A marker's JSON as kept in a call folder; undefined when it is not there, cut short or not of the schema. */
export async function readMarker<T>(folder: string, name: string, parse: (value: unknown) => T | undefined): Promise<T | undefined> {
  const text = await readFileNoFollow(`${folder}/${name}`);
  if (text === undefined) return undefined;
  try {
    return parse(JSON.parse(text));
  } catch {
    return undefined;
  }
}

/**
 * Writes what a change is about to do into the call's folder, before it
 * does it, so a kill after the change still leaves its undo findable by
 * the key. A retry of the same change finds its own marker and goes on;
 * a marker of another change refuses; one cut short by a kill is written
 * again.
 */
export async function keepMarker<T extends object>(own: number, name: string, marker: T, parse: (value: unknown) => T | undefined, same: (kept: T) => boolean): Promise<void> {
  const kept = await readMarker(procPath(own), name, parse);
  if (kept !== undefined) {
    if (same(kept)) return;
    throw new ToolRefusal('this call already kept its undo for another change; nothing more was changed');
  }
  const path = procPath(own, name);
  await unlink(path).catch(() => undefined);
  const fd = openFd(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW, 0o600);
  try {
    await writeAll(fd, Buffer.from(JSON.stringify(marker)));
  } finally {
    release(fd);
  }
}

/** Sets (`on`) or clears a mark file in an existing call folder (clearing one that is not there says nothing). */
export async function mark(root: string, key: string, name: string, on: boolean): Promise<void> {
  await inCallFolder(root, key, async (own) => {
    const path = procPath(own, name);
    if (on) release(openFd(path, O_WRONLY | O_CREAT | O_NOFOLLOW, 0o600));
    else await unlink(path).catch(() => undefined);
  });
}
