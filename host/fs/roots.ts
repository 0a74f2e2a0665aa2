import { realpath, stat } from 'node:fs/promises';
import { isAbsolute, relative, resolve, sep } from 'node:path';
import { AirlockError } from '../../core/util/errors';
import { ToolRefusal } from '../../core/tools/tool-refusal';
import { inside, locationOf, messageOf, O_DIRECTORY, O_PATH, openFd, release } from './descriptors';

export { ToolRefusal };

/** A path that is, or leads, outside every root. */
export class OutsideRoots extends ToolRefusal {
  override name = 'OutsideRoots';
  constructor(
    readonly input: string,
    readonly via: 'path' | 'symlink' | 'moved',
    roots: readonly string[] = [],
  ) {
    super(
      via === 'path'
        ? `${input} is outside the allowed roots (${roots.join(', ')})`
        : via === 'symlink'
          ? `${input} leads outside the allowed roots through a symbolic link`
          : `${input} was moved outside the allowed roots while it was being opened`,
    );
  }
}

/** A configured root is missing or not a directory, or this platform cannot confine the tools. */
export class RootsConfigError extends AirlockError {
  override name = 'RootsConfigError';
}

/** Where a lexical path lies: the root's real path and the names below it. */
export interface Located {
  readonly root: string;
  readonly parts: readonly string[];
}

/**
 * The tools act through descriptors and `/proc/self/fd` (see pinned-path.ts):
 * without them every check would be check-then-open by name, which a
 * swapped symlink defeats. Refuse to start rather than run weaker.
 */
function checkPinnedPaths(root: string, real: string, source: string): void {
  if (process.platform !== 'linux') {
    throw new RootsConfigError(`the file tools need Linux with /proc mounted (they stay inside the roots through /proc/self/fd); this is ${process.platform}`);
  }
  let fd: number;
  try {
    fd = openFd(real, O_PATH | O_DIRECTORY);
  } catch (err) {
    throw new RootsConfigError(`${source}: ${root} cannot be opened (${messageOf(err)})`);
  }
  let seen: string | undefined;
  try {
    seen = locationOf(fd);
  } catch {
    seen = undefined;
  } finally {
    release(fd);
  }
  if (seen !== real) {
    throw new RootsConfigError(`the file tools need /proc mounted: /proc/self/fd does not show where ${root} is (is /proc mounted in this container?)`);
  }
}

/**
 * The folders tools may touch. Paths are mapped onto them lexically here;
 * `pin` (pinned-path.ts) then opens them name by name, so neither `..` nor a
 * link can lead outside.
 */
export class Roots {
  private constructor(
    /** As configured. */
    readonly configured: readonly string[],
    /** Real paths, symlinks resolved. */
    readonly real: readonly string[],
  ) {}

  /** `source` names where the roots were configured, for errors: AIRLOCK_ROOTS or the tools config's `roots`. */
  static async create(paths: readonly string[], source = 'AIRLOCK_ROOTS'): Promise<Roots> {
    if (paths.length === 0) throw new RootsConfigError(`${source}: at least one root folder is needed`);
    const configured: string[] = [];
    const real: string[] = [];
    for (const p of paths) {
      if (!isAbsolute(p)) throw new RootsConfigError(`${source}: ${JSON.stringify(p)} is not an absolute path`);
      let info;
      try {
        info = await stat(p);
      } catch {
        throw new RootsConfigError(`${source}: ${p} does not exist; create it or remove it from ${source}`);
      }
      if (!info.isDirectory()) throw new RootsConfigError(`${source}: ${p} is not a directory`);
      const realPath = await realpath(p);
      checkPinnedPaths(p, realPath, source);
      configured.push(resolve(p));
      real.push(realPath);
    }
    return new Roots(configured, real);
  }

  isRoot(path: string): boolean {
    return this.real.includes(path) || this.configured.includes(path);
  }

  /** Absolute, `.`/`..`/`//` folded; relative paths are taken from the first root. */
  lexical(input: string): string {
    return isAbsolute(input) ? resolve(input) : resolve(this.configured[0] ?? sep, input);
  }

  /** The innermost root a lexical path lies in (as configured or as real path), or undefined. */
  locate(lexical: string): Located | undefined {
    let best: { prefix: string; root: string } | undefined;
    this.real.forEach((real, i) => {
      for (const prefix of [this.configured[i] ?? real, real]) {
        if (inside(prefix, lexical) && (best === undefined || prefix.length > best.prefix.length)) best = { prefix, root: real };
      }
    });
    if (best === undefined) return undefined;
    return { root: best.root, parts: relative(best.prefix, lexical).split(sep).filter((p) => p !== '') };
  }
}
