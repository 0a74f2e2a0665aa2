import { approvalRequestSchema } from '../../core/approval/approvals';
import { describeChanges, observedStateSchema, type ObservedState } from '../../core/tools/observed-state';

/** A folder as a build before recursive digests recorded it (shape taken from a recorded request). */
const oldStyleFolder = {
  path: '/srv/root/cache',
  exists: true,
  type: 'directory',
  size: 4096,
  mtimeMs: 1796030178905.18,
  mode: '755',
  dev: 65024,
  ino: 9978344,
  sha256: null,
  entries: 2,
} as const;

type Seen = Extract<ObservedState, { exists: true }>;

const deep = (entries: number, bytes: number, sha256: string): Seen => ({
  ...oldStyleFolder,
  entries: 2,
  tree: { complete: true, entries, bytes, sha256 },
});

test('an old-style folder state (no tree) still parses, alone and inside a parked request', () => {
  expect(observedStateSchema.parse(oldStyleFolder)).toEqual(oldStyleFolder);
  const request = {
    requestId: 'r1',
    callId: 'call_0_0',
    toolName: 'fs_delete',
    args: { path: '/srv/root/cache', recursive: true },
    fingerprint: 'a'.repeat(64),
    nonce: 'b'.repeat(32),
    ruleId: 'approve-deletes',
    ruleVersion: 1,
    reason: 'Deleting needs approval',
    editable: [],
    reviewers: null,
    separateRequester: false,
    signatureRequired: false,
    requester: 'tester',
    observed: [oldStyleFolder],
    createdAt: 1,
    expiresAt: 2,
    status: 'pending',
  };
  expect(approvalRequestSchema.parse(request).observed[0]).toEqual(oldStyleFolder);
  // New states parse too, complete or not.
  expect(observedStateSchema.parse(deep(3, 10, 'x'))).toMatchObject({ tree: { complete: true, entries: 3 } });
  expect(observedStateSchema.parse({ ...oldStyleFolder, tree: { complete: false, reason: 'too many' } })).toMatchObject({ tree: { complete: false } });
  expect(observedStateSchema.safeParse({ ...oldStyleFolder, tree: { complete: true, entries: 1 } }).success).toBe(false);
});

test('an old-style folder state compares shallowly, as before: its own entries and mtime', () => {
  const now = deep(5, 100, 'digest-now');
  expect(describeChanges(oldStyleFolder, now)).toEqual([]);
  expect(describeChanges(oldStyleFolder, { ...now, entries: 3 })).toEqual(['/srv/root/cache: entries 2 → 3']);
  expect(describeChanges(oldStyleFolder, { ...now, mtimeMs: 1 })).toEqual(['/srv/root/cache: modification time changed']);
});

test('describeChanges says what changed anywhere below a folder, with totals', () => {
  const before = deep(3, 30, 'one');
  expect(describeChanges(before, deep(3, 30, 'one'))).toEqual([]);
  expect(describeChanges(before, deep(4, 42, 'two'))).toEqual(['/srv/root/cache: 1 entry added below (entries 3 → 4, 30 → 42 bytes)']);
  expect(describeChanges(before, deep(1, 10, 'two'))).toEqual(['/srv/root/cache: 2 entries removed below (entries 3 → 1, 30 → 10 bytes)']);
  expect(describeChanges(before, deep(3, 31, 'two'))).toEqual(['/srv/root/cache: contents below changed (digest differs; entries 3 → 3, 30 → 31 bytes)']);
});

test('a folder too large to observe exactly never compares equal', () => {
  const tooLarge: ObservedState = { ...oldStyleFolder, tree: { complete: false, reason: '/srv/root/cache holds more than 10 entries below it' } };
  expect(describeChanges(tooLarge, tooLarge)).toEqual([
    '/srv/root/cache: cannot be compared: when it was observed for approval, /srv/root/cache holds more than 10 entries below it',
  ]);
  expect(describeChanges(deep(3, 30, 'one'), tooLarge)).toEqual(['/srv/root/cache: cannot be compared now: /srv/root/cache holds more than 10 entries below it']);
});

test('a file or folder replaced by a symbolic link says so', () => {
  const file: ObservedState = { path: '/a', exists: true, type: 'file', size: 1, mtimeMs: 1, mode: '644', dev: 1, ino: 2, sha256: 'x', entries: null };
  const link: ObservedState = { ...file, type: 'symlink', size: 9, ino: 3, sha256: null };
  expect(describeChanges(file, link)).toEqual(['/a: the file was replaced by a symbolic link']);
  expect(describeChanges(deep(3, 30, 'one'), { ...link, path: '/srv/root/cache' })).toEqual(['/srv/root/cache: the folder was replaced by a symbolic link']);
});
