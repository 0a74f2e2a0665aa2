import { readlinkSync, type Stats } from 'node:fs';
import { join, resolve } from 'node:path';
import { HOLDING_FOLDER, isHoldingFolder } from '../../core/tools/fs/holding-folder';
import { OutsideRoots, ToolRefusal, type Located, type Roots } from './roots';
import { ErrnoError, errnoCode, fstatFd, inside, locationOf, O_DIRECTORY, O_NOFOLLOW, O_PATH, openFd, procPath, release } from './descriptors';

/**
 * Path walking by descriptors. A call's path is opened from its root one
 * name at a time with O_NOFOLLOW, each name looked up in the folder the
 * previous descriptor holds; a symbolic link on the way is read and its
 * target walked again from a root. Nothing is looked up twice by name, so
 * a folder swapped for a link between a check and a use cannot lead out.
 */

/** Links followed for one path before giving up (the kernel allows 40). */
const MAX_LINK_HOPS = 40;
/** Walks restarted because a name changed between two looks at it. */
const MAX_RESTARTS = 8;

export class PathUnstable extends ToolRefusal {
  override name = 'PathUnstable';
  constructor(readonly input: string) {
    super(`${input} kept changing while it was being opened (something keeps replacing a name on the way); try again later`);
  }
}

export class TooManyLinks extends ToolRefusal {
  override name = 'TooManyLinks';
  constructor(readonly input: string) {
    super(`${input} goes through more than ${MAX_LINK_HOPS} symbolic links; name the real path instead`);
  }
}

/** A path into a root's holding folder, which belongs to airlock alone (see holding-folder.ts). */
export class InHoldingFolder extends ToolRefusal {
  override name = 'InHoldingFolder';
  constructor(readonly input: string) {
    super(`${input} is inside ${HOLDING_FOLDER}, the folder where airlock keeps what undo can restore; no tool may read, list or change it`);
  }
}

/** A call's target, held open: the entry `name` in a pinned folder, and the entry itself when there is one. */
export class Pinned {
  private closed = false;

  constructor(
    /** Real path of the root it lies in. */
    readonly root: string,
    /** Its real path, for messages and observed states. */
    readonly path: string,
    /** O_PATH descriptor of the folder holding it; null for a root itself. */
    readonly parent: number | null,
    readonly name: string,
    /** O_PATH descriptor of the entry itself (a symbolic link stays a link); null when nothing is there. */
    readonly fd: number | null,
    readonly stats: Stats | null,
    /** It is one of the allowed roots (possibly reached from another root). */
    readonly isRoot: boolean,
  ) {}

  /** The name in the pinned folder, for unlink, rmdir, rename and create (none follows a final link). */
  entryPath(): string {
    if (this.parent === null) throw new ToolRefusal(`refusing to act on an allowed root itself (${this.path})`);
    return procPath(this.parent, this.name);
  }

  /** The entry's own descriptor; ENOENT when nothing is there. */
  descriptor(): number {
    if (this.fd === null) throw new ErrnoError('ENOENT', this.path);
    return this.fd;
  }

  /** The entry itself through its descriptor, to reopen, chmod or list exactly what was checked. */
  selfPath(): string {
    return procPath(this.descriptor());
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    release(this.fd);
    release(this.parent);
  }
}

/** Checks where the kernel says a descriptor is; returns that real path. */
export function confirmInside(fd: number, root: string, input: string): string {
  const where = locationOf(fd);
  if (!inside(root, where)) throw new OutsideRoots(input, 'moved');
  return where;
}

/** A root's own folder, opened and checked to be where it was configured; refused (naming `input`) when it was moved or replaced. */
export function openRoot(root: string, input: string): number {
  const fd = openFd(root, O_PATH | O_DIRECTORY);
  let where: string | undefined;
  try {
    where = locationOf(fd);
  } catch {
    where = undefined;
  }
  if (where !== root) {
    release(fd);
    throw new ToolRefusal(`the allowed root ${root} was moved or replaced, so ${input} cannot be reached safely; tell the operator`);
  }
  return fd;
}

/** The entry `name` in folder `dir`, not following a link; null when there is none. */
function openEntry(dir: number, name: string): { fd: number; stats: Stats } | null {
  let fd: number;
  try {
    fd = openFd(procPath(dir, name), O_PATH | O_NOFOLLOW);
  } catch (err) {
    if (errnoCode(err) === 'ENOENT') return null;
    throw err;
  }
  try {
    return { fd, stats: fstatFd(fd) };
  } catch (err) {
    release(fd);
    throw err;
  }
}

/** What a link in `dir` says now; undefined when it is no longer a link (it changed since it was opened). */
function readLinkIn(dir: number, name: string): string | undefined {
  try {
    return readlinkSync(procPath(dir, name));
  } catch (err) {
    if (errnoCode(err) === 'EINVAL' || errnoCode(err) === 'ENOENT') return undefined;
    throw err;
  }
}

type Step = { kind: 'pinned'; pinned: Pinned } | { kind: 'link'; next: string } | { kind: 'changed' };

function walk(roots: Roots, at: Located, input: string, follow: boolean): Step {
  let dir = openRoot(at.root, input);
  let dirPath = at.root;
  let handedOver = false;
  try {
    for (const [i, name] of at.parts.entries()) {
      // Also through a link or a nested root: every walk passes here, from a root, name by name.
      if (isHoldingFolder(name, roots.isRoot(dirPath))) throw new InHoldingFolder(input);
      const last = i === at.parts.length - 1;
      const rest = at.parts.slice(i + 1);
      const entry = openEntry(dir, name);
      if (entry === null) {
        if (!last) throw new ErrnoError('ENOENT', join(dirPath, name, ...rest));
        handedOver = true;
        const path = join(dirPath, name);
        return { kind: 'pinned', pinned: new Pinned(at.root, path, dir, name, null, null, roots.isRoot(path)) };
      }
      if (entry.stats.isSymbolicLink() && (follow || !last)) {
        release(entry.fd);
        // Read by name: if it changed since, the walk starts over; whatever it says is walked again from a root.
        const target = readLinkIn(dir, name);
        return target === undefined ? { kind: 'changed' } : { kind: 'link', next: resolve(dirPath, target, ...rest) };
      }
      if (!last && !entry.stats.isDirectory()) {
        release(entry.fd);
        throw new ErrnoError('ENOTDIR', join(dirPath, name, ...rest));
      }
      let where: string;
      try {
        where = confirmInside(entry.fd, at.root, input);
      } catch (err) {
        release(entry.fd);
        throw err;
      }
      if (last) {
        handedOver = true;
        const path = join(dirPath, name);
        return { kind: 'pinned', pinned: new Pinned(at.root, path, dir, name, entry.fd, entry.stats, roots.isRoot(path)) };
      }
      release(dir);
      dir = entry.fd;
      dirPath = where;
    }
    const stats = fstatFd(dir);
    handedOver = true;
    return { kind: 'pinned', pinned: new Pinned(at.root, at.root, null, '', dir, stats, true) };
  } finally {
    if (!handedOver) release(dir);
  }
}

/**
 * Opens a call's path inside the roots. `follow` follows a final symbolic
 * link (for reading), re-pinning its target from a root; without it the
 * link itself is returned, for the tool to refuse and the observer to see.
 * Links on the way are followed either way, as long as they stay inside.
 */
export function pin(roots: Roots, input: string, options: { readonly follow: boolean }): Pinned {
  let lexical = roots.lexical(input);
  let hops = 0;
  let restarts = 0;
  for (;;) {
    const at = roots.locate(lexical);
    if (at === undefined) throw new OutsideRoots(input, hops === 0 ? 'path' : 'symlink', roots.configured);
    const step = walk(roots, at, input, options.follow);
    if (step.kind === 'pinned') return step.pinned;
    if (step.kind === 'link') {
      if (++hops > MAX_LINK_HOPS) throw new TooManyLinks(input);
      lexical = step.next;
    } else if (++restarts > MAX_RESTARTS) {
      throw new PathUnstable(input);
    }
  }
}

/** Runs `use` on the pinned target and closes its descriptors whatever happens. */
export async function withPinned<T>(roots: Roots, input: string, options: { readonly follow: boolean }, use: (target: Pinned) => Promise<T>): Promise<T> {
  const target = pin(roots, input, options);
  try {
    return await use(target);
  } finally {
    target.close();
  }
}
