import { lstat, rename, unlink } from 'node:fs/promises';
import { ToolRefusal } from '../../core/tools/tool-refusal';
import { errnoCode } from '../fs/descriptors';
import type { Pinned } from '../fs/pinned-path';
import { callOf, sameFile, type ChangeOf, type ChangeUndo, type UndoContext } from './restore-context';
import { changedSince, linkBack, observeKept } from './restore-entry';

/**
 * Undo of a move: the moved entry goes back from its destination to where
 * it was, only while it is still the entry that was moved (its inode and
 * its content or tree digest) and nothing is at its old place; then the
 * file the move replaced (kept under a second name) goes back at the
 * destination. A file goes by a link that refuses an existing name and an
 * unlink, a folder by one rename; a kill between the steps leaves a state
 * `back` recognises and finishes.
 */
/**
 * Moves the entry at `place` back to `from` by name, then makes sure the
 * name it moved was the checked entry (a program may have saved another
 * file there since the check): if not, that entry goes back where it was
 * and the undo refuses.
 */
async function moveBack(place: Pinned, from: Pinned, moved: { readonly dev: number; readonly ino: number }, folder: boolean): Promise<void> {
  const isMoved = async () => {
    const now = await lstat(from.entryPath()).catch(() => undefined);
    return now !== undefined && now.dev === moved.dev && now.ino === moved.ino;
  };
  const swapped = new ToolRefusal(`${place.path} was replaced while it was being moved back; it was left where it was, and nothing was moved back`);
  if (folder) {
    await rename(place.entryPath(), from.entryPath());
    if (await isMoved()) return;
    await rename(from.entryPath(), place.entryPath()).catch(() => undefined);
    throw swapped;
  }
  await linkBack(place, from, async () => {
    if (await isMoved()) return true;
    await unlink(from.entryPath()).catch(() => undefined);
    return false;
  }).then((ok) => {
    if (!ok) throw swapped;
  });
}

/** `moveBack`, with what the file system refused said as a refusal ("nothing was moved back": of this entry). */
export async function entryBack(place: Pinned, from: Pinned, moved: { readonly dev: number; readonly ino: number }, folder: boolean): Promise<void> {
  try {
    await moveBack(place, from, moved, folder);
  } catch (err) {
    if (err instanceof ToolRefusal) throw err;
    const code = errnoCode(err);
    if (code === 'EEXIST' || code === 'ENOTEMPTY' || code === 'ENOTDIR' || code === 'EISDIR') throw new ToolRefusal(`${from.path} was made again while the entry was being moved back; nothing was moved back`);
    if (code === 'ENOENT') throw new ToolRefusal(`${place.path} went while it was being moved back (another undo?); nothing was moved back`);
    throw new ToolRefusal(`${place.path} could not be moved back (${code ?? 'error'}); nothing was moved back`);
  }
}

export function movedUndo(c: UndoContext, change: ChangeOf<'moved'>): ChangeUndo {
  const { record, target: from, held: replacedKept, other: to, t } = c;
  const moved = record.held.dev !== undefined && record.held.ino !== undefined ? { dev: record.held.dev, ino: record.held.ino, born: change.born } : undefined;
  const replaced = change.replaced;

  /** The destination pinned, or why the undo cannot name it. */
  function destination(): Pinned {
    if (to === null) throw new ToolRefusal(`name where ${callOf(t)} moved the entry (its destination) to move it back`);
    return to;
  }

  /** Puts the kept file back at the destination (a link refusing an existing name, then its kept name goes). */
  async function replacedBack(place: Pinned): Promise<void> {
    if (replaced === undefined || replacedKept === null) return;
    await linkBack(replacedKept, place);
  }

  return {
    async back() {
      if (moved === undefined || !sameFile(from.stats, moved)) return false;
      const place = destination();
      // A file under both names: the undo was cut between its link and its unlink.
      const there = await lstat(place.entryPath()).catch(() => undefined);
      if (there !== undefined && there.dev === moved.dev && there.ino === moved.ino) await unlink(place.entryPath());
      if (replaced === undefined) return true;
      const now = await lstat(place.entryPath()).catch(() => undefined);
      if (replacedKept === null) return now !== undefined && now.dev === replaced.dev && now.ino === replaced.ino;
      // The replaced file under both names (cut between its link and its unlink): its kept name goes.
      if (now !== undefined && replacedKept.stats !== null && now.dev === replacedKept.stats.dev && now.ino === replacedKept.stats.ino) {
        await unlink(replacedKept.entryPath());
        return true;
      }
      if (now !== undefined) throw new ToolRefusal(`${place.path} was taken after the entry went back; the file the move replaced is still kept`);
      // The replaced file still kept and its place free: put it back now.
      await replacedBack(place);
      return true;
    },

    async check() {
      const place = destination();
      if (moved === undefined) throw new ToolRefusal(`the record of ${callOf(t)} does not say which entry it moved; nothing was moved back`);
      if (from.stats !== null) throw new ToolRefusal(`${from.path} exists again (made after the move); move or delete it first, then undo again`);
      if (!sameFile(place.stats, moved)) throw new ToolRefusal(`${place.path} is not the entry ${callOf(t)} moved there (moved on or replaced since); nothing was moved back`);
      const why = changedSince(record, await observeKept(c, place));
      if (why !== undefined) throw new ToolRefusal(`${place.path} changed after the move (${why}); nothing was moved back`);
      if (replaced === undefined) return;
      if (replacedKept === null) throw new ToolRefusal(`the file ${callOf(t)} replaced at ${place.path} is no longer kept; nothing was moved back`);
      const reborn = replaced.born !== undefined && replacedKept.stats !== null && replacedKept.stats.birthtimeMs !== replaced.born ? 'it is another file than the one that was kept (born at another time)' : undefined;
      const kept = reborn ?? changedSince({ ...record, held: replaced }, await observeKept(c, replacedKept));
      if (kept !== undefined) throw new ToolRefusal(`what airlock keeps of the file ${callOf(t)} replaced was changed (${kept}); nothing was moved back`);
    },

    async undo() {
      const place = destination();
      if (moved === undefined) throw new ToolRefusal(`the record of ${callOf(t)} does not say which entry it moved; nothing was moved back`);
      await entryBack(place, from, moved, record.held.type === 'directory');
      try {
        await replacedBack(place);
      } catch (err) {
        // The entry is back; the replaced file stays kept, and a second undo puts it back once the destination is free.
        throw new ToolRefusal(`moved ${place.path} back to ${from.path}, but the file it replaced could not be put back (${errnoCode(err) ?? 'error'}); it is still kept: free ${place.path} and undo again`);
      }
      return `moved ${place.path} back to ${from.path}${replaced !== undefined ? ' and put back the file it replaced' : ''}`;
    },
  };
}
