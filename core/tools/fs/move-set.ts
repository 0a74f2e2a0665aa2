import { isInside } from '../../util/posix-path';
import { sha256Hex } from '../../util/sha256';
import type { FileCapability } from '../capabilities/files';
import { type FileState } from '../observed-state';
import { ToolRefusal } from '../tool-refusal';
import { type Move, moveListProblems } from './move-plan';

/** A bulk move's set as the tools side sees it: each entry observed, and the real places its names reach. */

export function parentOf(path: string): string {
  const cut = path.lastIndexOf('/');
  return cut <= 0 ? '/' : path.slice(0, cut);
}

/** What each entry is now, the set's digest and totals, and why the tool would refuse it. */
export interface SetObservation {
  readonly entries: ReadonlyArray<{ readonly move: Move; readonly source: FileState }>;
  readonly digest: string;
  readonly bytes: number;
  readonly problems: readonly string[];
}

export function contentDigest(s: Extract<FileState, { exists: true }>): string | null {
  if (s.type === 'directory') return s.tree?.complete === true ? s.tree.sha256 : null;
  return s.sha256;
}

export async function observeSet(files: FileCapability, moves: readonly Move[]): Promise<SetObservation> {
  const problems = [...moveListProblems(moves)];
  const entries: Array<{ move: Move; source: FileState }> = [];
  const lines: string[] = [];
  let bytes = 0;
  for (const [i, move] of moves.entries()) {
    const n = `entry ${i + 1}`;
    let source: FileState;
    try {
      source = await files.observe(move.from, { follow: false, deep: true });
      const destination = await files.observe(move.to, { follow: false, hash: false });
      const folder = await files.observe(parentOf(move.to), { follow: true, hash: false });
      const home = await files.observe(parentOf(move.from), { follow: true, hash: false });
      if (files.roots.includes(move.from)) problems.push(`${n}: ${move.from} is an allowed root itself`);
      else if (source.exists && home.exists && home.dev !== source.dev) problems.push(`${n}: ${move.from} is a mount point (another file system starts there); a bulk move never moves one`);
      if (!source.exists) problems.push(`${n}: ${move.from} does not exist`);
      else if (source.type === 'symlink') problems.push(`${n}: ${move.from} is a symbolic link; the tool refuses to move a link`);
      else if (source.type === 'directory' && source.tree?.complete !== true) problems.push(`${n}: ${source.tree?.complete === false ? source.tree.reason : `${move.from} cannot be observed exactly`}`);
      if (destination.exists) problems.push(`${n}: ${move.to} already exists (bulk moves never replace anything)`);
      if (!folder.exists || folder.type !== 'directory') problems.push(`${n}: the folder ${parentOf(move.to)} does not exist`);
      // A rename is atomic only within one file system; across them it would be a copy, which this tool never does.
      else if (source.exists && folder.dev !== source.dev) problems.push(`${n}: ${move.from} and ${move.to} are on different file systems; a bulk move only renames`);
    } catch (err) {
      problems.push(`${n}: ${err instanceof ToolRefusal ? err.message : `${move.from} cannot be observed (${err instanceof Error ? err.message : String(err)})`}`);
      source = { path: move.from, exists: false };
    }
    entries.push({ move, source });
    if (source.exists) {
      bytes += source.type === 'directory' ? (source.tree?.complete === true ? source.tree.bytes : 0) : source.type === 'file' ? source.size : 0;
      lines.push(JSON.stringify([move.from, move.to, source.type, source.size, contentDigest(source), source.dev, source.ino, source.type === 'directory' ? null : source.mtimeMs]));
    } else lines.push(JSON.stringify([move.from, move.to, null]));
  }
  problems.push(...(await realPlaceProblems(files, moves)));
  return { entries, digest: sha256Hex(`${lines.join('\n')}\n`), bytes, problems };
}

/**
 * The set's checks again on the real places (every link on the way
 * resolved), so an alias inside a root cannot hide that two entries are
 * one, that one lies inside another, or that a move chains into another;
 * and no real source or destination is an allowed root.
 */
export async function realPlaceProblems(files: FileCapability, moves: readonly Move[]): Promise<string[]> {
  const facts = await files.facts(moves.flatMap((m) => [m.from, m.to]));
  const roots = (await files.facts(files.roots)).targets.map((t) => t.real ?? t.path);
  const realOf = (path: string) => facts.targets.find((t) => t.path === path)?.real ?? null;
  const problems: string[] = [];
  const real: Move[] = [];
  moves.forEach((m, i) => {
    const from = realOf(m.from);
    const to = realOf(m.to);
    if (from === null || to === null) problems.push(`entry ${i + 1}: where ${from === null ? m.from : m.to} really is cannot be told`);
    else {
      if (roots.includes(from)) problems.push(`entry ${i + 1}: ${m.from} is an allowed root itself (${from})`);
      if (roots.some((r) => isInside(to, r))) problems.push(`entry ${i + 1}: ${m.to} would replace an allowed root`);
      real.push({ from, to });
    }
  });
  if (problems.length > 0 || real.length !== moves.length) return problems;
  const asWritten = new Set(moveListProblems(moves));
  for (const problem of moveListProblems(real)) if (!asWritten.has(problem)) problems.push(`with links resolved, ${problem}`);
  return problems;
}
