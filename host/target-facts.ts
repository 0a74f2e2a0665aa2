import { lstat, realpath } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, resolve, sep } from 'node:path';
import type { Stats } from 'node:fs';
import type { CallFacts, TargetFact } from '../core/tools/facts';

function typeOf(info: Stats): NonNullable<TargetFact['type']> {
  if (info.isSymbolicLink()) return 'symlink';
  if (info.isDirectory()) return 'directory';
  if (info.isFile()) return 'file';
  return 'other';
}

/** Whether some component of the absolute path, the last included, is a symbolic link. */
async function throughSymlink(absolute: string): Promise<boolean> {
  let prefix: string = sep;
  for (const part of absolute.split(sep).filter((p) => p !== '')) {
    prefix = join(prefix, part);
    const info = await lstat(prefix).catch(() => undefined);
    if (info === undefined) return false;
    if (info.isSymbolicLink()) return true;
  }
  return false;
}

/** The real place: links resolved; for a missing target, its real parent and its own name. */
async function realPlace(absolute: string): Promise<string | null> {
  try {
    return await realpath(absolute);
  } catch {
    try {
      return join(await realpath(dirname(absolute)), basename(absolute));
    } catch {
      return null;
    }
  }
}

/**
 * Facts of one target as this host sees it. Advisory, for policy: the
 * tools keep their own confinement when they act, whatever these say.
 */
export async function targetFact(target: string, base: string): Promise<TargetFact> {
  const absolute = isAbsolute(target) ? resolve(target) : resolve(base, target);
  const info = await lstat(absolute).catch(() => undefined);
  return {
    path: target,
    real: await realPlace(absolute),
    exists: info !== undefined,
    symlink: await throughSymlink(absolute),
    ...(info === undefined ? {} : { type: typeOf(info), mode: (info.mode & 0o7777).toString(8).padStart(3, '0'), size: info.size }),
    ...(info !== undefined && !info.isDirectory() && info.nlink > 1 ? { links: info.nlink } : {}),
  };
}

export async function callFacts(targets: readonly string[], roots: readonly string[]): Promise<CallFacts> {
  const base = roots[0] ?? process.cwd();
  return { targets: await Promise.all(targets.map((t) => targetFact(t, base))) };
}
