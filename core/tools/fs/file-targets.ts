import { z } from 'zod';
import { isFileState, type FileState, type ObservedState } from '../observed-state';
import type { FileCapability } from '../capabilities/files';
import type { Prepared, TargetProblem } from '../tool-module';
import { ToolRefusal } from '../tool-refusal';
import type { KeptKind } from '../undo';

/** What the file tools share: the path argument and how their targets are observed. */

export const pathArg = z
  .string()
  .min(1, 'path must not be empty')
  .max(4096)
  .refine((p) => !p.includes('\0'), 'path must not contain NUL');

function errorText(err: unknown): string {
  if (typeof err === 'object' && err !== null) {
    if ('code' in err && typeof err.code === 'string') return err.code;
    if ('message' in err && typeof err.message === 'string') return err.message;
  }
  return String(err);
}

/**
 * Each target as it is now, with why the tool or the approval will refuse
 * it. Reads follow a final link; changes act on the name itself, so a link
 * there is refused. A target that cannot be observed is recorded as
 * seen-as-missing: the same failure later compares equal.
 */
export async function prepareFiles(files: FileCapability, targets: readonly string[], follow: boolean): Promise<Prepared> {
  const observed: FileState[] = [];
  const problems: Array<TargetProblem | undefined> = [];
  for (const target of targets) {
    try {
      const seen = await files.observe(target, { follow, deep: true });
      observed.push(seen);
      if (seen.exists && seen.type === 'symlink' && !follow) problems.push({ kind: 'refused', reason: `${target} is a symbolic link; the tool refuses to act on a link` });
      // Too large to digest exactly: never approvable, since revalidation cannot compare it.
      else if (seen.exists && seen.tree?.complete === false) problems.push({ kind: 'refused', reason: seen.tree.reason });
      else problems.push(undefined);
    } catch (err) {
      problems.push(err instanceof ToolRefusal ? { kind: 'refused', reason: err.message } : { kind: 'unobservable', reason: `${target} cannot be observed (${errorText(err)})` });
      observed.push({ path: target, exists: false });
    }
  }
  return { observed, problems };
}

/** A file state at a position, when it is one. */
export function fileAt(states: readonly ObservedState[] | undefined, i: number): FileState | undefined {
  const state = states?.[i];
  return state !== undefined && isFileState(state) ? state : undefined;
}

/**
 * `prepared` with whether its one target's change can be kept for undo
 * (what the card says), asked only for a target the tool will act on;
 * `bytes` is what keeping it takes against the root's quota, `kind` what
 * the change keeps (an entry moved aside unless said).
 */
export async function withReversibility(files: FileCapability, path: string, prepared: Prepared, bytes: (target: FileState) => number | undefined, kind?: KeptKind): Promise<Prepared> {
  const target = fileAt(prepared.observed, 0);
  if (prepared.problems[0] !== undefined || target?.exists !== true) return prepared;
  const undo = await files.reversibility(path, bytes(target), kind).catch(() => undefined);
  return undo === undefined ? prepared : { ...prepared, undo };
}
