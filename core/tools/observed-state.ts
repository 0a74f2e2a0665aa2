import { z } from 'zod';
import { humanSize, sizeChange } from '../util/human-size';

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
 * What `prepare` saw of a file or folder a call acts on. The original
 * shape, without a `kind`: every request parked, state carried and nonce
 * row written before other kinds existed is one of these.
 */
export const fileStateSchema = z.discriminatedUnion('exists', [
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
    /**
     * Names the file has, when more than one (hard links): a change through
     * this name changes it under the others too, which may lie outside the
     * roots. Absent for a file with one name, for folders, and in states
     * from before.
     */
    links: z.number().int().optional(),
  }),
]);
export type FileState = z.infer<typeof fileStateSchema>;

/** Small facts a tool records about its target, shown to the reviewer and compared later. */
const scalar = z.union([z.string(), z.number(), z.boolean(), z.null()]);
export const stateFactsSchema = z.record(z.string().max(100), scalar);

/**
 * A service or container as an adapter saw it. `identity` pins the very
 * instance that was approved (a container id, a unit file's hash, a pid
 * with its start time): another instance under the same name is another
 * target.
 */
export const serviceStateSchema = z.strictObject({
  kind: z.literal('service'),
  /** The service's name in the tools config. */
  service: z.string(),
  /** The adapter that observed it, e.g. docker, systemd, process. */
  adapter: z.string(),
  exists: z.boolean(),
  identity: z.string().nullable(),
  running: z.boolean(),
  health: z.enum(['healthy', 'unhealthy', 'starting', 'none', 'unknown']),
  /** The adapter's own word for its state, e.g. "running", "exited (1)", "active (running)". */
  status: z.string(),
  facts: stateFactsSchema,
});
export type ServiceState = z.infer<typeof serviceStateSchema>;

/**
 * Any other target (an endpoint, a command's binary): what it is, what
 * pins it, a line for the reviewer and a few facts compared later. A new
 * tool records its state in this shape without changing this file.
 */
export const subjectStateSchema = z.strictObject({
  kind: z.literal('subject'),
  /** What was observed, as the reviewer reads it: "https://example.org/api", "/usr/bin/restic". */
  subject: z.string(),
  exists: z.boolean(),
  /** What pins it (an inode, a resolved address); null when nothing does. */
  identity: z.string().nullable(),
  /** One line for the reviewer. */
  summary: z.string(),
  facts: stateFactsSchema,
});
export type SubjectState = z.infer<typeof subjectStateSchema>;

/**
 * What `prepare` saw of a call's target, shown to the reviewer and checked
 * again before the call runs: the reviewer approved *this* state. A file
 * state has no `kind` (older data parses as it always did); other kinds
 * are told apart by it.
 */
export const observedStateSchema = z.union([fileStateSchema, z.discriminatedUnion('kind', [serviceStateSchema, subjectStateSchema])]);
export type ObservedState = FileState | ServiceState | SubjectState;

export function isFileState(o: ObservedState): o is FileState {
  return !('kind' in o);
}

/** The name of what was observed: a path, a service, a subject. */
export function observedSubject(o: ObservedState): string {
  if (isFileState(o)) return o.path;
  return o.kind === 'service' ? o.service : o.subject;
}

/** The same state with its name (and free text) passed through `mask`, for surfaces people see. */
export function mapObservedText(o: ObservedState, mask: (text: string) => string): ObservedState {
  if (isFileState(o)) return { ...o, path: mask(o.path) };
  if (o.kind === 'service') return { ...o, status: mask(o.status) };
  return { ...o, subject: mask(o.subject), summary: mask(o.summary) };
}

const entriesText = (n: number) => `${n} ${n === 1 ? 'entry' : 'entries'}`;

/** What changed below a folder; empty when the digests match. */
function describeTree(before: TreeState, now: TreeState): string[] {
  if (!before.complete) return [`cannot be compared: when it was observed for approval, ${before.reason}`];
  if (!now.complete) return [`cannot be compared now: ${now.reason}`];
  if (before.sha256 === now.sha256) return [];
  const totals = `entries ${before.entries} → ${now.entries}, ${sizeChange(before.bytes, now.bytes)}`;
  const delta = now.entries - before.entries;
  if (delta > 0) return [`${entriesText(delta)} added below (${totals})`];
  if (delta < 0) return [`${entriesText(-delta)} removed below (${totals})`];
  return [`contents below changed (digest differs; ${totals})`];
}

/** Human-readable differences between a file as approved and as it is now; empty when unchanged. */
function describeFileChanges(before: FileState, now: FileState): string[] {
  if (!before.exists && !now.exists) return [];
  if (!before.exists) return [`${now.path} now exists (it did not when the call was approved)`];
  if (!now.exists) return [`${before.path} no longer exists`];
  if (now.type === 'symlink' && before.type !== 'symlink') {
    return [`${before.path}: the ${before.type === 'directory' ? 'folder' : before.type} was replaced by a symbolic link`];
  }
  const changes: string[] = [];
  if (before.type !== now.type) changes.push(`type ${before.type} → ${now.type}`);
  if (before.dev !== now.dev || before.ino !== now.ino) changes.push('it was replaced by another file');
  if (before.size !== now.size) changes.push(`size ${sizeChange(before.size, now.size)}`);
  if (before.sha256 !== now.sha256) changes.push('content changed (sha256 differs)');
  // A state from before recursive digests compares as it did then: its own entries only.
  if (before.tree !== undefined && now.tree !== undefined) changes.push(...describeTree(before.tree, now.tree));
  else if (before.entries !== now.entries) changes.push(`entries ${String(before.entries)} → ${String(now.entries)}`);
  if (before.mode !== now.mode) changes.push(`mode ${before.mode} → ${now.mode}`);
  if ((before.links ?? 1) !== (now.links ?? 1)) changes.push(`names (hard links) ${before.links ?? 1} → ${now.links ?? 1}`);
  if (changes.length === 0 && before.mtimeMs !== now.mtimeMs) changes.push('modification time changed');
  return changes.map((c) => `${before.path}: ${c}`);
}

/** A folder's totals: files (when counted), entries and bytes below it. */
export function folderTotals(tree: Extract<TreeState, { complete: true }>): string {
  const files = tree.files !== undefined ? `${tree.files} ${tree.files === 1 ? 'file' : 'files'}, ` : '';
  return `${files}${entriesText(tree.entries)}, ${humanSize(tree.bytes)}`;
}

/** One line for a reviewer: what the file is now, with a folder's totals below it. */
function describeFile(o: FileState): string {
  if (!o.exists) return 'does not exist';
  const parts: string[] = [o.type === 'directory' ? 'folder' : o.type];
  if (o.type === 'directory') {
    if (o.tree?.complete === true) parts.push(`${folderTotals(o.tree)} below`);
    else if (o.tree?.complete === false) parts.push(`too large to observe exactly (${o.tree.reason})`);
    else if (o.entries !== null) parts.push(entriesText(o.entries));
  } else parts.push(humanSize(o.size));
  parts.push(`mode ${o.mode}`);
  if (o.links !== undefined) parts.push(`${o.links} names (hard links: changing it changes it under every name)`);
  if (o.sha256 !== null) parts.push(`sha256 ${o.sha256.slice(0, 16)}…`);
  return parts.join(', ');
}

function factChanges(before: SubjectState['facts'], now: SubjectState['facts']): string[] {
  const keys = [...new Set([...Object.keys(before), ...Object.keys(now)])].sort();
  return keys.filter((k) => before[k] !== now[k]).map((k) => `${k} ${String(before[k] ?? 'unset')} → ${String(now[k] ?? 'unset')}`);
}

function describeServiceChanges(before: ServiceState, now: ServiceState): string[] {
  if (before.exists && !now.exists) return [`service ${before.service} no longer exists`];
  if (!before.exists && now.exists) return [`service ${now.service} now exists (it did not when the call was approved)`];
  const changes: string[] = [];
  if (before.identity !== now.identity) changes.push(`it is another instance now (${before.identity ?? 'none'} → ${now.identity ?? 'none'})`);
  if (before.running !== now.running) changes.push(now.running ? 'it is running now' : 'it is no longer running');
  if (before.health !== now.health) changes.push(`health ${before.health} → ${now.health}`);
  if (changes.length === 0 && before.status !== now.status) changes.push(`status ${before.status} → ${now.status}`);
  return changes.map((c) => `${before.service}: ${c}`);
}

function describeSubjectChanges(before: SubjectState, now: SubjectState): string[] {
  if (before.exists && !now.exists) return [`${before.subject} no longer exists`];
  if (!before.exists && now.exists) return [`${now.subject} now exists (it did not when the call was approved)`];
  const changes: string[] = [];
  if (before.identity !== now.identity) changes.push(`it was replaced (${before.identity ?? 'none'} → ${now.identity ?? 'none'})`);
  changes.push(...factChanges(before.facts, now.facts));
  return changes.map((c) => `${before.subject}: ${c}`);
}

/** Human-readable differences between what was approved and what is there now; empty when unchanged. */
export function describeChanges(before: ObservedState, now: ObservedState): string[] {
  if (isFileState(before) && isFileState(now)) return describeFileChanges(before, now);
  if (!isFileState(before) && !isFileState(now)) {
    if (before.kind === 'service' && now.kind === 'service') return describeServiceChanges(before, now);
    if (before.kind === 'subject' && now.kind === 'subject') return describeSubjectChanges(before, now);
  }
  // One side could not be observed (recorded as a missing file) or the kinds differ: what it is now is all there is to say.
  if (!now.exists) return [`${observedSubject(before)} no longer exists`];
  if (!before.exists) return [`${observedSubject(now)} now exists (it did not when the call was approved)`];
  return [`${observedSubject(before)} is another kind of target now (${describeObserved(now)})`];
}

/** One line for a reviewer: what the target is now. */
export function describeObserved(o: ObservedState): string {
  if (isFileState(o)) return describeFile(o);
  if (o.kind === 'subject') return o.exists ? o.summary : 'does not exist';
  if (!o.exists) return `no such service (${o.adapter})`;
  const health = o.health === 'none' || o.health === 'unknown' ? '' : `, ${o.health}`;
  const identity = o.identity === null ? '' : `, ${o.identity.slice(0, 12)}`;
  return `${o.adapter} ${o.status}${health}${identity}`;
}
