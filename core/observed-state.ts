import { z } from 'zod';

/**
 * What `prepare` saw of a call's target, shown to the reviewer and checked
 * again before the call runs: the reviewer approved *this* state.
 */
export const observedStateSchema = z.discriminatedUnion('exists', [
  z.strictObject({ path: z.string(), exists: z.literal(false) }),
  z.strictObject({
    path: z.string(),
    exists: z.literal(true),
    type: z.enum(['file', 'directory', 'symlink', 'other']),
    size: z.number(),
    mtimeMs: z.number(),
    /** Permission bits, octal. */
    mode: z.string(),
    /** Device and inode: a replaced file is another file even with the same bytes. */
    dev: z.number(),
    ino: z.number(),
    /** Files up to the hashing limit; null for larger files and other types. */
    sha256: z.string().nullable(),
    /** Directories only. */
    entries: z.number().nullable(),
  }),
]);
export type ObservedState = z.infer<typeof observedStateSchema>;

/** Human-readable differences between what was approved and what is there now; empty when unchanged. */
export function describeChanges(before: ObservedState, now: ObservedState): string[] {
  if (!before.exists && !now.exists) return [];
  if (!before.exists) return [`${now.path} now exists (it did not when the call was approved)`];
  if (!now.exists) return [`${before.path} no longer exists`];
  const changes: string[] = [];
  if (before.type !== now.type) changes.push(`type ${before.type} → ${now.type}`);
  if (before.dev !== now.dev || before.ino !== now.ino) changes.push('it was replaced by another file');
  if (before.size !== now.size) changes.push(`size ${before.size} → ${now.size} bytes`);
  if (before.sha256 !== now.sha256) changes.push('content changed (sha256 differs)');
  if (before.entries !== now.entries) changes.push(`entries ${String(before.entries)} → ${String(now.entries)}`);
  if (before.mode !== now.mode) changes.push(`mode ${before.mode} → ${now.mode}`);
  if (changes.length === 0 && before.mtimeMs !== now.mtimeMs) changes.push('modification time changed');
  return changes.map((c) => `${before.path}: ${c}`);
}
