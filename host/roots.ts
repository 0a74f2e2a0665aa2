import { lstat, realpath, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from 'node:path';
import { AirlockError } from '../core/errors';

/** A tool refused a call on its own safety checks; the model is told why. */
export class ToolRefusal extends AirlockError {
  override name = 'ToolRefusal';
}

/** A configured root is missing or not a directory. */
export class RootsConfigError extends AirlockError {
  override name = 'RootsConfigError';
}

function inside(parent: string, child: string): boolean {
  const rel = relative(parent, child);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel) && rel.split(sep)[0] !== '..');
}

async function exists(path: string): Promise<boolean> {
  try {
    await lstat(path);
    return true;
  } catch {
    return false;
  }
}

/**
 * The folders tools may touch. Every path is resolved against them with
 * symlinks followed, so neither `..` nor a link can lead outside.
 */
export class Roots {
  private constructor(
    /** As configured. */
    readonly configured: readonly string[],
    /** Real paths, symlinks resolved. */
    readonly real: readonly string[],
  ) {}

  static async create(paths: readonly string[]): Promise<Roots> {
    if (paths.length === 0) throw new RootsConfigError('AIRLOCK_ROOTS: at least one root folder is needed');
    const configured: string[] = [];
    const real: string[] = [];
    for (const p of paths) {
      if (!isAbsolute(p)) throw new RootsConfigError(`AIRLOCK_ROOTS: ${JSON.stringify(p)} is not an absolute path`);
      let info;
      try {
        info = await stat(p);
      } catch {
        throw new RootsConfigError(`AIRLOCK_ROOTS: ${p} does not exist; create it or remove it from AIRLOCK_ROOTS`);
      }
      if (!info.isDirectory()) throw new RootsConfigError(`AIRLOCK_ROOTS: ${p} is not a directory`);
      configured.push(resolve(p));
      real.push(await realpath(p));
    }
    return new Roots(configured, real);
  }

  isRoot(path: string): boolean {
    return this.real.includes(path) || this.configured.includes(path);
  }

  private insideAny(path: string): boolean {
    return this.real.some((r) => inside(r, path));
  }

  /**
   * Resolves a path from a tool call. Relative paths are taken from the
   * first root. `follow` resolves a final symlink (for reading); without it a
   * final symlink is refused (nothing acts on a link's target by surprise).
   */
  async resolve(input: string, options: { follow: boolean }): Promise<string> {
    const lexical = isAbsolute(input) ? resolve(input) : resolve(this.configured[0]!, input);
    if (!this.configured.some((r) => inside(r, lexical)) && !this.insideAny(lexical)) {
      throw new ToolRefusal(`${input} is outside the allowed roots (${this.configured.join(', ')})`);
    }
    // The parent's real path decides where the name really lives.
    let ancestor = dirname(lexical);
    const rest: string[] = [];
    while (!(await exists(ancestor))) {
      rest.unshift(basename(ancestor));
      const up = dirname(ancestor);
      if (up === ancestor) break;
      ancestor = up;
    }
    let realAncestor: string;
    try {
      realAncestor = await realpath(ancestor);
    } catch (err) {
      // A symlink loop, a dangling link or a folder we may not enter: nothing safe to act on.
      throw new ToolRefusal(`${input} cannot be resolved (${(err as NodeJS.ErrnoException).code ?? (err as Error).message})`, { cause: err });
    }
    const realParent = join(realAncestor, ...rest);
    const target = lexical === dirname(lexical) ? realParent : join(realParent, basename(lexical));
    if (!this.insideAny(realParent) && !this.isRoot(target)) {
      throw new ToolRefusal(`${input} leads outside the allowed roots through a symbolic link`);
    }
    let info;
    try {
      info = await lstat(target);
    } catch {
      return this.checkInside(input, target);
    }
    if (info.isSymbolicLink()) {
      if (!options.follow) throw new ToolRefusal(`${input} is a symbolic link; refusing to act on it`);
      let resolved: string;
      try {
        resolved = await realpath(target);
      } catch {
        throw new ToolRefusal(`${input} is a dangling symbolic link`);
      }
      return this.checkInside(input, resolved, 'through a symbolic link');
    }
    return this.checkInside(input, target);
  }

  private checkInside(input: string, path: string, how = ''): string {
    if (!this.insideAny(path)) {
      throw new ToolRefusal(`${input} leads outside the allowed roots${how === '' ? '' : ` ${how}`}`);
    }
    return path;
  }
}
