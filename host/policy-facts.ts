import { lstat } from 'node:fs/promises';
import { isAbsolute, join, resolve, sep } from 'node:path';
import type { CallFacts } from '../core/policy/detectors';

/**
 * What the agent side can see of a call's targets, for the `symlink_path`
 * and `mode_widening` detectors. A target it cannot see adds nothing: the
 * tools side keeps its own confinement whatever these say.
 */
export async function gatherFacts(targets: readonly string[], roots: readonly string[]): Promise<CallFacts> {
  const symlinks: string[] = [];
  const modes: Record<string, string> = {};
  for (const target of targets) {
    const absolute = isAbsolute(target) ? resolve(target) : resolve(roots[0] ?? process.cwd(), target);
    let prefix: string = sep;
    for (const part of absolute.split(sep).filter((p) => p !== '')) {
      prefix = join(prefix, part);
      const info = await lstat(prefix).catch(() => undefined);
      if (info === undefined) break;
      if (info.isSymbolicLink()) {
        symlinks.push(target);
        break;
      }
      if (prefix === absolute) modes[target] = (info.mode & 0o7777).toString(8).padStart(3, '0');
    }
  }
  return { symlinks, modes };
}
