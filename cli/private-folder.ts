import { lstatSync, mkdirSync, type Stats } from 'node:fs';
import { dirname, parse } from 'node:path';

/** A folder above: this user's or root's, and writable by no one else unless sticky (as /tmp is). */
function safeAbove(s: Stats, uid: number): boolean {
  const othersMayWrite = (s.mode & 0o022) !== 0 && (s.mode & 0o1000) === 0;
  return s.isDirectory() && (s.uid === uid || s.uid === 0) && !othersMayWrite;
}

/** Every folder from `start` up to the root is safe above; a missing one counts as nothing yet. */
function safeChain(start: string, uid: number): boolean {
  const { root } = parse(start);
  for (let above = start; ; above = dirname(above)) {
    let s: Stats | undefined;
    try {
      s = lstatSync(above);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') return false;
    }
    if (s !== undefined && !safeAbove(s, uid)) return false;
    if (above === root) return true;
  }
}

/**
 * Made (0700) if missing; used only if it is a real folder of this user's
 * that only this user can write, and every folder above it is this user's
 * or root's and writable by no one else (or sticky, as /tmp is): then no
 * one else can put anything in it or swap it, or a folder above, for theirs.
 * Nothing is made under a folder that fails this (root running with another
 * user's HOME leaves nothing of root's there). Only node builtins: the CLI
 * checks its folders before anything else loads.
 */
export function privateFolder(folder: string, uid: number): boolean {
  try {
    if (!safeChain(dirname(folder), uid)) return false;
    mkdirSync(folder, { recursive: true, mode: 0o700 });
    const own = lstatSync(folder);
    if (!own.isDirectory() || own.uid !== uid || (own.mode & 0o077) !== 0) return false;
    return safeChain(dirname(folder), uid);
  } catch {
    return false;
  }
}
