import type { KeyObject } from 'node:crypto';
import { MockActivityEnvironment } from '@temporalio/testing';
import { spawnSync } from 'node:child_process';
import { chownSync, mkdirSync, mkdtempSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createToolGateActivities, type ExecuteInput, type ExecuteResult } from '../../activities/tool-gate';
import { createGrantVerifier } from '../../host/keys/grant-keys';
import { SqliteNonceStore } from '../../host/stores/nonces/sqlite';
import { Roots } from '../../host/fs/roots';
import type { UndoSettings } from '../../host/tools/undo-settings';
import { repoRoot } from './processes';

/** A real folder set up for undo (`share`, 7 days) with its own nonce store, for one test. */
export interface UndoRoot {
  readonly dir: string;
  readonly root: string;
  readonly nonces: SqliteNonceStore;
  readonly undo: UndoSettings;
}

export function freshUndoRoot(prefix: string): UndoRoot {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const root = join(dir, 'share');
  mkdirSync(root);
  return { dir, root, nonces: new SqliteNonceStore(join(dir, 'tools', 'nonces.sqlite')), undo: { roots: [realpathSync(root)], keepDays: 7 } };
}

export async function dropUndoRoot(r: UndoRoot): Promise<void> {
  await r.nonces.close();
  rmSync(r.dir, { recursive: true, force: true });
}

/** The real gate activities over the root, verifying grants with `publicKey`; bulk moves journal in `<dir>/journals`. */
export async function gateOver(r: UndoRoot, publicKey: KeyObject, options: { readonly now?: () => number } = {}) {
  const roots = await Roots.create([r.root]);
  return createToolGateActivities({ roots, nonces: r.nonces, verifier: createGrantVerifier(publicKey), claimStaleMs: 0, undo: r.undo, journalDir: join(r.dir, 'journals'), ...options });
}

/** One `execute` attempt, as a worker runs it. */
export function runAttempt(gate: ReturnType<typeof createToolGateActivities>, input: ExecuteInput, attempt = 1): Promise<ExecuteResult> {
  return new MockActivityEnvironment({ attempt }).run(gate.execute, input);
}

/**
 * Runs `body` in a real child process as the user nobody (65534), as a
 * tools worker that is not root: `root` (the real path of `share`),
 * `files` (the file capability over it, set up for undo) and `store` (its
 * own nonce store) are in scope; `body` fills `answer`, which comes back.
 */
export function asNobody(dir: string, share: string, body: string): Record<string, unknown> {
  const script = `
    const D = ${JSON.stringify(join(repoRoot, 'dist'))};
    const { Roots } = require(D + '/host/fs/roots');
    const { createFileCapability } = require(D + '/host/tools/file-host');
    const { SqliteNonceStore } = require(D + '/host/stores/nonces/sqlite');
    const { pathDigest } = require(D + '/host/stores/nonces/store');
    (async () => {
      process.setgid(65534); process.setuid(65534);
      const root = ${JSON.stringify(realpathSync(share))};
      const store = new SqliteNonceStore(${JSON.stringify(join(dir, 'nobody-nonces', 'n.sqlite'))});
      const files = createFileCapability(await Roots.create([root]), { undo: { roots: [root], keepDays: 7 }, undoRecords: store });
      const answer = {};
      ${body}
      console.log(JSON.stringify(answer));
      await store.close();
    })().catch((e) => { console.log(JSON.stringify({ error: String(e) })); process.exit(1); });`;
  mkdirSync(join(dir, 'nobody-nonces'), { recursive: true });
  chownSync(join(dir, 'nobody-nonces'), 65534, 65534);
  const out = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8' });
  return JSON.parse(out.stdout.trim().split('\n').pop() ?? '{}') as Record<string, unknown>;
}

/** A fresh undo root and the real gate over it for each test of a file (made before each, removed after). */
export function undoFixture(prefix: string, publicKey: KeyObject) {
  let current: (UndoRoot & { gate: ReturnType<typeof createToolGateActivities> }) | undefined;
  beforeEach(async () => {
    const r = freshUndoRoot(prefix);
    current = { ...r, gate: await gateOver(r, publicKey) };
  });
  afterEach(async () => {
    if (current !== undefined) await dropUndoRoot(current);
    current = undefined;
  });
  const now = () => {
    if (current === undefined) throw new Error('an undo fixture is there only while a test runs');
    return current;
  };
  return {
    get dir() {
      return now().dir;
    },
    get root() {
      return now().root;
    },
    get nonces() {
      return now().nonces;
    },
    get undo() {
      return now().undo;
    },
    get gate() {
      return now().gate;
    },
    /** For a test that needs the gate over other roots. */
    set gate(gate: ReturnType<typeof createToolGateActivities>) {
      now().gate = gate;
    },
  };
}
