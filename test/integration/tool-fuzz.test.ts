import { createHash, generateKeyPairSync, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ApplicationFailure } from '@temporalio/common';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createTargetFactActivities } from '../../activities/target-facts';
import { createToolGateActivities } from '../../activities/tool-gate';
import { callFingerprint } from '../../core/approval/fingerprint';
import { toolDefinitions } from '../../core/tools/registry';
import { createGrantSigner, createGrantVerifier } from '../../host/keys/grant-keys';
import { SqliteNonceStore } from '../../host/stores/nonces/sqlite';
import { Roots } from '../../host/fs/roots';

/**
 * Every tool's tools-side steps (facts, prepare, execute with a valid
 * grant for exactly that call) given boundary and random arguments: empty,
 * ".", "..", the root, paths out of it, very long, NUL, lone surrogates,
 * huge and negative numbers, wrong types, enormous lists. Each step either
 * answers or refuses with a final (non-retryable) failure saying what was
 * wrong: never a crash, never a failure Temporal would retry, and never an
 * effect outside the roots.
 */
let base: string;
let root: string;
let outside: string;
let nonces: SqliteNonceStore;
const keys = generateKeyPairSync('ed25519');
const signer = createGrantSigner(keys.privateKey);

function treeDigest(dir: string): string {
  const hash = createHash('sha256');
  const walk = (d: string) => {
    for (const name of readdirSync(d).sort()) {
      const p = join(d, name);
      const s = statSync(p, { throwIfNoEntry: false });
      hash.update(`${p}:${s?.mode ?? 0}:${s?.size ?? -1}\n`);
      if (s?.isDirectory() === true) walk(p);
      else if (s?.isFile() === true) hash.update(readFileSync(p));
    }
  };
  walk(dir);
  return hash.digest('hex');
}

beforeAll(() => {
  base = mkdtempSync(join(tmpdir(), 'airlock-fuzz-'));
  root = join(base, 'root');
  outside = join(base, 'outside');
  mkdirSync(join(root, 'sub'), { recursive: true });
  mkdirSync(outside);
  writeFileSync(join(root, 'a.txt'), 'a');
  writeFileSync(join(outside, 'secret.txt'), 'do not touch');
  symlinkSync(outside, join(root, 'escape'));
  // A name that is not UTF-8.
  writeFileSync(Buffer.concat([Buffer.from(`${root}/`), Buffer.from([0x66, 0xff, 0xfe])]), 'bytes');
  nonces = new SqliteNonceStore(join(base, 'nonces.sqlite'));
});
afterAll(async () => {
  await nonces.close();
  rmSync(base, { recursive: true, force: true });
});

const long = 'a'.repeat(5000);
const deep = Array.from({ length: 400 }, () => 'd').join('/');
const strings = () => ['', '.', '..', '../outside/secret.txt', '/', root, `${root}/..`, `${root}/escape/secret.txt`, long, deep, 'x\0y', 'bad\udc80name', ' ', '-rf', 'f\uFFFD\u00ff'];
const others = [null, true, 0, -1, 1e308, Number.MAX_SAFE_INTEGER + 2, [], {}, [1, 2], 'a'.repeat(70_000)];

/** A valid call per tool, the seed every variant changes one field of. */
const seeds: Record<string, Record<string, unknown>> = {
  fs_list: { path: '.' },
  fs_read: { path: 'a.txt' },
  fs_stat: { path: 'a.txt' },
  fs_write: { path: 'new.txt', content: 'x', mode: 'create' },
  fs_move: { from: 'a.txt', to: 'b.txt' },
  fs_move_many: { moves: [{ from: 'a.txt', to: 'b.txt' }] },
  fs_delete: { path: 'a.txt' },
  fs_chmod: { path: 'a.txt', mode: '644' },
  service_status: { service: 'web' },
  service_start: { service: 'web' },
  service_stop: { service: 'web' },
  service_restart: { service: 'web' },
  http_request: { url: 'http://127.0.0.1:9/' },
  command_run: { argv: ['hello'] },
};

/** Relative paths as the gate gives them: absolute, inside the first root. */
function canonical(value: unknown): unknown {
  if (typeof value === 'string' && !value.startsWith('/') && value !== '' && !value.includes('\0')) return join(root, value);
  return value;
}

function variants(seed: Record<string, unknown>, random: () => number): Array<Record<string, unknown>> {
  const out: Array<Record<string, unknown>> = [];
  for (const key of Object.keys(seed)) {
    for (const v of [...strings(), ...others]) out.push({ ...seed, [key]: canonical(v) });
    if (key === 'moves') {
      for (const from of strings()) for (const to of ['.', 'sub/x', root, '..']) out.push({ moves: [{ from: canonical(from), to: canonical(to) }] });
      out.push({ moves: [{ from: root, to: join(root, 'sub', 'moved') }] });
      out.push({ moves: Array.from({ length: 1500 }, (_, i) => ({ from: join(root, `f${i}`), to: join(root, `g${i}`) })) });
    }
  }
  out.push({ ...seed, extra: 'field' });
  // Random strings of random bytes for every field.
  for (let n = 0; n < 20; n++) {
    const key = Object.keys(seed)[Math.floor(random() * Object.keys(seed).length)] ?? 'path';
    out.push({ ...seed, [key]: canonical(randomBytes(1 + Math.floor(random() * 64)).toString('latin1')) });
  }
  return out;
}

/** An answer, or a final refusal that says what was wrong: anything else fails the test with the call that caused it. */
async function settles(step: string, run: () => Promise<unknown>): Promise<void> {
  try {
    await run();
  } catch (err) {
    const final = err instanceof ApplicationFailure && err.nonRetryable && typeof err.message === 'string' && err.message.length > 0 && !/ZodError|^\[\s*\{/.test(err.message);
    if (!final) throw new Error(`${step}: ${err instanceof Error ? `${err.name}: ${err.message.slice(0, 300)}` : String(err)} (retryable or unclear)`);
  }
}

test('every tool, every boundary argument: an answer or a final, readable refusal; nothing outside the roots changes', async () => {
  const rootsOf = await Roots.create([root]);
  const deps = { roots: rootsOf, nonces, verifier: createGrantVerifier(keys.publicKey), journalDir: join(base, 'journals') };
  const gate = createToolGateActivities(deps);
  const facts = createTargetFactActivities(deps);
  const env = new MockActivityEnvironment();
  const before = treeDigest(outside);
  let seed = 42;
  const random = () => {
    seed = (seed * 1103515245 + 12345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  let steps = 0;
  for (const toolName of toolDefinitions.keys()) {
    const seedArgs = seeds[toolName];
    if (seedArgs === undefined) continue;
    for (const args of variants(seedArgs, random)) {
      const what = `${toolName} ${JSON.stringify(args).slice(0, 200)}`;
      await settles(`facts ${what}`, () => env.run(facts.resolveTargets, { calls: [{ callId: 'c', toolName, args }] }));
      await settles(`prepare ${what}`, () => env.run(gate.prepareApproval, { toolName, args }));
      const nonce = randomBytes(16).toString('hex');
      const fingerprint = callFingerprint({ jobId: 'fuzz', scope: {}, toolName, normalizedArgs: args, ruleId: null, ruleVersion: null });
      const grant = signer.sign({ v: 1, jobId: 'fuzz', callId: `c-${steps}`, fingerprint, nonce, expiresAt: Date.now() + 60_000 });
      await settles(`execute ${what}`, () =>
        env.run(gate.execute, { jobId: 'fuzz', callId: `c-${steps}`, scope: {}, toolName, args, ruleId: null, ruleVersion: null, grant }),
      );
      steps++;
    }
  }
  expect(steps).toBeGreaterThan(500);
  expect(treeDigest(outside)).toBe(before);
  expect(existsSync(root)).toBe(true);
}, 300_000);
