import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createToolActivities, type ToolActivities } from '../../activities';
import { isFileState } from '../../core/tools/observed-state';
import { createGrantVerifier } from '../../host/keys/grant-keys';
import { SqliteNonceStore } from '../../host/stores/nonces/sqlite';
import { Roots } from '../../host/fs/roots';

/**
 * The facts round prepares the approvals of the calls it resolves, so a
 * call that parks after it is observed once (the real activity functions
 * of the tools worker, on a real folder).
 */
let dir: string;
let root: string;
let nonces: SqliteNonceStore;
let tools: ToolActivities;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-facts-'));
  root = join(dir, 'root');
  mkdirSync(root);
  nonces = new SqliteNonceStore(join(dir, 'nonces.sqlite'));
  tools = createToolActivities({ roots: await Roots.create([root]), nonces, verifier: createGrantVerifier(generateKeyPairSync('ed25519').publicKey) });
});
afterEach(async () => {
  await nonces.close();
  rmSync(dir, { recursive: true, force: true });
});

test('asked to prepare, the facts round answers each call as prepareApproval would: its targets now, a preview, a nonce of its own', async () => {
  writeFileSync(join(root, 'notes.txt'), 'old line\n');
  writeFileSync(join(root, 'gone.txt'), 'bye');
  const calls = [
    { callId: 'c1', toolName: 'fs_delete', args: { path: 'gone.txt' } },
    { callId: 'c2', toolName: 'fs_write', args: { path: 'notes.txt', content: 'new line\n', mode: 'overwrite' } },
  ];
  const answer = await tools.resolveTargets({ calls, prepare: ['c1', 'c2'] });
  expect(Object.keys(answer.facts).sort()).toEqual(['c1', 'c2']);
  const prepared = answer.prepared ?? {};
  expect(Object.keys(prepared).sort()).toEqual(['c1', 'c2']);
  const [gone] = prepared.c1?.observed ?? [];
  expect(gone !== undefined && isFileState(gone) && gone.exists && gone.size).toBe(3);
  expect(prepared.c2?.preview).toBeDefined();
  expect(prepared.c1?.nonce).toMatch(/^[0-9a-f]{32}$/);
  expect(prepared.c1?.nonce).not.toEqual(prepared.c2?.nonce);
  expect(prepared.c1?.requestId).not.toEqual(prepared.c2?.requestId);
  // What it observed is what prepareApproval observes of the same call.
  const separate = await tools.prepareApproval({ toolName: 'fs_delete', args: { path: 'gone.txt' } });
  expect(prepared.c1?.observed).toEqual(separate.observed);
});

test('it prepares only the calls it is asked to; a call it cannot prepare is left out, for prepareApproval to try with retries when it parks', async () => {
  writeFileSync(join(root, 'a.txt'), 'a');
  const calls = [
    { callId: 'c1', toolName: 'fs_delete', args: { path: 'a.txt' } },
    { callId: 'c2', toolName: 'fs_delete', args: { path: 'a.txt', nonsense: true } },
  ];
  expect((await tools.resolveTargets({ calls })).prepared).toBeUndefined();
  expect(Object.keys((await tools.resolveTargets({ calls, prepare: ['c2'] })).prepared ?? {})).toEqual([]);
  const answer = await tools.resolveTargets({ calls, prepare: ['c1', 'c2'] });
  expect(Object.keys(answer.prepared ?? {})).toEqual(['c1']);
});
