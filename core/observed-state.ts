import { z } from 'zod';

/**
 * Everything below a folder, as one comparable value. Absent in states
 * recorded before it existed (requests parked by an older build): those
 * compare shallowly, as they did then.
 */
export const treeStateSchema = z.discriminatedUnion('complete', [
  z.strictObject({
    complete: z.literal(true),
    /** Entries below, recursively. */
    entries: z.number(),
    /** Regular files among them (absent in states observed before it was counted). */
    files: z.number().optional(),
    /** Sum of the sizes of the regular files below. */
    bytes: z.number(),
    /** sha256 over the sorted (relative path, type, size, mtime, inode) of every entry below, links not followed. */
    sha256: z.string(),
  }),
  /** Too large to observe exactly: never digested in part, and never approvable to run. */
  z.strictObject({ complete: z.literal(false), reason: z.string() }),
]);
export type TreeState = z.infer<typeof treeStateSchema>;

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
    /** Directories only: its own entries. */
    entries: z.number().nullable(),
    /** Directories only, when observed deeply (optional: older states lack it). */
    tree: treeStateSchema.optional(),
  }),
]);
export type ObservedState = z.infer<typeof observedStateSchema>;

const entriesText = (n: number) => `${n} ${n === 1 ? 'entry' : 'entries'}`;

/** What changed below a folder; empty when the digests match. */
function describeTree(before: TreeState, now: TreeState): string[] {
  if (!before.complete) return [`cannot be compared: when it was observed for approval, ${before.reason}`];
  if (!now.complete) return [`cannot be compared now: ${now.reason}`];
  if (before.sha256 === now.sha256) return [];
  const totals = `entries ${before.entries} → ${now.entries}, ${before.bytes} → ${now.bytes} bytes`;
  const delta = now.entries - before.entries;
  if (delta > 0) return [`${entriesText(delta)} added below (${totals})`];
  if (delta < 0) return [`${entriesText(-delta)} removed below (${totals})`];
  return [`contents below changed (digest differs; ${totals})`];
}

/** Human-readable differences between what was approved and what is there now; empty when unchanged. */
export function describeChanges(before: ObservedState, now: ObservedState): string[] {
  if (!before.exists && !now.exists) return [];
  if (!before.exists) return [`${now.path} now exists (it did not when the call was approved)`];
  if (!now.exists) return [`${before.path} no longer exists`];
  if (now.type === 'symlink' && before.type !== 'symlink') {
    return [`${before.path}: the ${before.type === 'directory' ? 'folder' : before.type} was replaced by a symbolic link`];
  }
  const changes: string[] = [];
  if (before.type !== now.type) changes.push(`type ${before.type} → ${now.type}`);
  if (before.dev !== now.dev || before.ino !== now.ino) changes.push('it was replaced by another file');
  if (before.size !== now.size) changes.push(`size ${before.size} → ${now.size} bytes`);
  if (before.sha256 !== now.sha256) changes.push('content changed (sha256 differs)');
  // A state from before recursive digests compares as it did then: its own entries only.
  if (before.tree !== undefined && now.tree !== undefined) changes.push(...describeTree(before.tree, now.tree));
  else if (before.entries !== now.entries) changes.push(`entries ${String(before.entries)} → ${String(now.entries)}`);
  if (before.mode !== now.mode) changes.push(`mode ${before.mode} → ${now.mode}`);
  if (changes.length === 0 && before.mtimeMs !== now.mtimeMs) changes.push('modification time changed');
  return changes.map((c) => `${before.path}: ${c}`);
}

/** A folder's totals: files (when counted), entries and bytes below it. */
export function folderTotals(tree: Extract<TreeState, { complete: true }>): string {
  const files = tree.files !== undefined ? `${tree.files} ${tree.files === 1 ? 'file' : 'files'}, ` : '';
  return `${files}${entriesText(tree.entries)}, ${tree.bytes} bytes`;
}

/** One line for a reviewer: what the target is now, with a folder's totals below it. */
export function describeObserved(o: ObservedState): string {
  if (!o.exists) return 'does not exist';
  const parts: string[] = [o.type === 'directory' ? 'folder' : o.type];
  if (o.type === 'directory') {
    if (o.tree?.complete === true) parts.push(`${folderTotals(o.tree)} below`);
    else if (o.tree?.complete === false) parts.push(`too large to observe exactly (${o.tree.reason})`);
    else if (o.entries !== null) parts.push(entriesText(o.entries));
  } else parts.push(`${o.size} bytes`);
  parts.push(`mode ${o.mode}`);
  if (o.sha256 !== null) parts.push(`sha256 ${o.sha256.slice(0, 16)}…`);
  return parts.join(', ');
}
