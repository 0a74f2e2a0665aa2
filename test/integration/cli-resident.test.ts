import { execFile, spawn } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { alive, gone } from '../helpers/dev-stack';
import { JobHarness } from '../helpers/job-harness';
import { repoRoot } from '../helpers/processes';
import { killResidentsUnder, residentsUnder } from '../helpers/resident-processes';

/**
 * The resident CLI process (cli/resident/): `pending`, `show`, `approve`
 * and `deny` run in a process that has the CLI loaded, started by the first
 * such command. Real CLI processes against a real dev server and workers.
 * Which process ran a command is read from the resident process's title
 * (`airlock resident CLI: N commands`), which `ps` shows.
 */

const run = promisify(execFile);
const OTHER_UID = 12_345;

let h: JobHarness;
let base: string;

beforeAll(async () => {
  h = await JobHarness.create({
    rules: { version: 1, rules: [{ id: 'approve-deletes', version: 1, name: 'Deleting needs approval', scope: { categories: ['delete'] }, action: 'request_approval' }] },
  });
  base = mkdtempSync(join(tmpdir(), 'airlock-resident-'));
});
afterEach(async () => {
  killResidentsUnder(base);
  await h.terminateRunning();
});
afterAll(async () => {
  await h.close();
  rmSync(base, { recursive: true, force: true });
});

/** A runtime folder of the test's own: its resident processes are told apart from any other by it. */
function runtimeDir(name: string): string {
  const dir = join(base, name);
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  return dir;
}

type Run = { code: number; stdout: string; stderr: string };

async function cli(runtime: string, args: string[], extra: Record<string, string> = {}, cwd?: string): Promise<Run> {
  try {
    const out = await run(process.execPath, [join(repoRoot, 'bin', 'airlock.js'), ...args], {
      env: h.processEnv({ XDG_RUNTIME_DIR: runtime, AIRLOCK_CLI_RESIDENT: 'always', ...extra }),
      timeout: 60_000,
      ...(cwd !== undefined ? { cwd } : {}),
    });
    return { code: 0, stdout: out.stdout, stderr: out.stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

/**
 * The resident processes under the folder once they count `total` commands
 * between them (or after 5 s): a process counts a command after its answer
 * is sent, so the caller can exit a moment before the count moves.
 */
async function residentsAfter(runtime: string, total: number): Promise<Map<number, number>> {
  for (let i = 0; i < 50; i++) {
    const found = residentsUnder(runtime);
    if ([...found.values()].reduce((a, b) => a + b, 0) >= total) return found;
    await new Promise((r) => setTimeout(r, 100));
  }
  return residentsUnder(runtime);
}

/** Waits until one resident process serves the folder; its pid and commands run. */
async function residentOf(runtime: string): Promise<{ pid: number; served: number }> {
  for (let i = 0; i < 200; i++) {
    const found = [...residentsUnder(runtime)];
    if (found.length === 1 && found[0] !== undefined) return { pid: found[0][0], served: found[0][1] };
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`no single resident process for ${runtime}: ${JSON.stringify([...residentsUnder(runtime)])}`);
}

async function parkDelete(name: string): Promise<string> {
  writeFileSync(join(h.root, name), 'old backup');
  const { jobId } = await h.start({ script: { turns: [{ tool_calls: [{ name: 'fs_delete', arguments: { path: name } }] }, { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] }] } });
  await h.waitForPending(jobId);
  // Listed by visibility too, so `pending` sees it whichever process asks.
  for (let i = 0; i < 50; i++) {
    const listed = await cli(runtimeDir('listing'), ['pending', '--json'], { AIRLOCK_CLI_RESIDENT: 'off' });
    if (listed.stdout.includes(jobId)) return jobId;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`${jobId} is not listed`);
}

test('the first command runs here and starts a resident process; the next ones print the same from it, byte for byte, exit codes too', async () => {
  const runtime = runtimeDir('same-output');
  const jobId = await parkDelete('same.tar');
  const first = await cli(runtime, ['show', 'no-such-job']);
  expect(first).toEqual(await cli(runtime, ['show', 'no-such-job'], { AIRLOCK_CLI_RESIDENT: 'off' }));
  const { pid, served } = await residentOf(runtime);
  expect(served).toBe(0);

  const lines: string[][] = [
    ['pending'],
    ['pending', '--json'],
    ['pending', '--card'],
    ['pending', '--limit', 'many'],
    ['show', jobId, '--json'],
    ['show', 'no-such-job'],
    ['show'],
    ['approve', 'no-such-job', '--reviewer', 'alice'],
    ['deny', jobId],
    ['pendng'],
  ];
  // Ages and time left ("waiting 3s", "expires in 23h") move on between two runs.
  const timeless = (out: Run): Run => ({ ...out, stdout: out.stdout.replace(/\b\d+(ms|s|m|h|d)\b/g, 'T') });
  for (const args of lines) {
    const here = timeless(await cli(runtime, args, { AIRLOCK_CLI_RESIDENT: 'off' }));
    const there = timeless(await cli(runtime, args));
    expect({ args, ...there }).toEqual({ args, ...here });
  }
  // Nine of the ten are served there (an unknown command is not one it serves), by the same process.
  expect(await residentsAfter(runtime, 9)).toEqual(new Map([[pid, 9]]));
  expect((await cli(runtime, ['pending', '--limit', 'many'])).code).toBe(2);
  expect((await cli(runtime, ['show', 'no-such-job'])).code).toBe(1);
});

test('each command runs under its own environment and folder: an approval names the reviewer its caller set, once', async () => {
  const runtime = runtimeDir('per-request');
  const jobId = await parkDelete('each.tar');
  await cli(runtime, ['show', 'no-such-job'], { AIRLOCK_REVIEWER: 'bob' });
  const { pid } = await residentOf(runtime);

  // A relative --sign path is read from the caller's folder: here a file that is no key, elsewhere none at all.
  const folder = mkdtempSync(join(base, 'cwd-'));
  writeFileSync(join(folder, 'key.pem'), 'not a key');
  const signed = await cli(runtime, ['approve', jobId, '--sign', './key.pem'], { AIRLOCK_REVIEWER: 'carol' }, folder);
  expect(signed).toEqual(await cli(runtime, ['approve', jobId, '--sign', './key.pem'], { AIRLOCK_REVIEWER: 'carol', AIRLOCK_CLI_RESIDENT: 'off' }, folder));
  expect(signed).toMatchObject({ code: 2, stderr: expect.stringContaining('--sign: ./key.pem is not a readable Ed25519 private key') });
  expect((await cli(runtime, ['approve', jobId, '--sign', './key.pem'], { AIRLOCK_REVIEWER: 'carol' }, base)).stderr).toMatch(/ENOENT|no such file/);

  const approved = await cli(runtime, ['approve', jobId], { AIRLOCK_REVIEWER: 'carol' });
  expect(approved).toMatchObject({ code: 0, stdout: expect.stringMatching(/^accepted: request .* is approved/), stderr: '' });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(existsSync(join(h.root, 'each.tar'))).toBe(false);
  expect(h.audit(jobId, 'approval_decided').map((e) => e.data)).toEqual([expect.objectContaining({ reviewer: 'carol', decision: 'approve' })]);
  expect(h.audit(jobId, 'tool_executed')).toHaveLength(1);
  expect(await residentsAfter(runtime, 3)).toEqual(new Map([[pid, 3]]));
});

test('what the process itself writes while a command runs (a warning of Node\'s) reaches the caller too', async () => {
  const runtime = runtimeDir('node-output');
  await cli(runtime, ['show', 'x']);
  await residentOf(runtime);
  // TLS to an IP address: Node warns that the server name is ignored (once per process: the resident's first time).
  const tls = { TEMPORAL_TLS: 'true' };
  const there = await cli(runtime, ['show', 'x'], tls);
  const here = await cli(runtime, ['show', 'x'], { ...tls, AIRLOCK_CLI_RESIDENT: 'off' });
  const pidless = (out: Run) => ({ ...out, stderr: out.stderr.replace(/\(node:\d+\)/g, '(node:PID)') });
  expect(here.stderr).toContain('[DEP0123] DeprecationWarning');
  expect(pidless(there)).toEqual(pidless(here));
});

test('many callers at once each get their own answer', async () => {
  const runtime = runtimeDir('concurrent');
  await cli(runtime, ['pending']);
  await residentOf(runtime);
  const outs = await Promise.all(Array.from({ length: 6 }, (_, i) => cli(runtime, ['show', `missing-${i}`])));
  outs.forEach((out, i) => expect(out).toEqual({ code: 1, stdout: '', stderr: `airlock show: no job missing-${i} in this namespace; list jobs with \`airlock pending\`\n` }));
  expect([...(await residentsAfter(runtime, 6)).values()]).toEqual([6]);
});

test('by default one is started only from a terminal (a script leaves none behind), and is used by every command once it runs', async () => {
  const runtime = runtimeDir('auto');
  const auto = { AIRLOCK_CLI_RESIDENT: 'auto' };
  expect(await cli(runtime, ['show', 'x'], auto)).toMatchObject({ code: 1, stderr: expect.stringContaining('no job x') });
  await new Promise((r) => setTimeout(r, 1500));
  expect(residentsUnder(runtime).size).toBe(0);
  // util-linux's `script` runs the command at a terminal of its own.
  const atTerminal = await run('script', ['-qec', `${process.execPath} ${join(repoRoot, 'bin', 'airlock.js')} show x`, '/dev/null'], {
    env: h.processEnv({ XDG_RUNTIME_DIR: runtime, ...auto }),
  }).catch((err: { stdout?: string }) => ({ stdout: err.stdout ?? '' }));
  expect(atTerminal.stdout).toContain('no job x');
  const { pid } = await residentOf(runtime);
  expect(await cli(runtime, ['show', 'x'], auto)).toMatchObject({ code: 1, stderr: expect.stringContaining('no job x') });
  expect(await residentsAfter(runtime, 1)).toEqual(new Map([[pid, 1]]));
});

test('a resident process killed outright leaves no trouble: the next command runs here and starts another', async () => {
  const runtime = runtimeDir('killed');
  await cli(runtime, ['pending']);
  const { pid } = await residentOf(runtime);
  process.kill(pid, 'SIGKILL');
  expect(await gone(pid)).toBe(true);
  // Its socket is still there, with no one behind it.
  expect(readdirSync(join(runtime, 'airlock')).filter((f) => f.endsWith('.sock'))).toHaveLength(1);
  expect(await cli(runtime, ['show', 'gone-job'])).toMatchObject({ code: 1, stderr: expect.stringContaining('no job gone-job') });
  const next = await residentOf(runtime);
  expect(next.pid).not.toBe(pid);
  expect(await cli(runtime, ['show', 'gone-job'])).toMatchObject({ code: 1 });
  expect((await residentsAfter(runtime, 1)).get(next.pid)).toBe(1);
});

test('another locale, Node options or confinement get a process of their own; AIRLOCK_CLI_RESIDENT=off starts none', async () => {
  const runtime = runtimeDir('identity');
  await cli(runtime, ['pending']);
  const { pid } = await residentOf(runtime);
  // A variable read when the command runs comes with it; one read when a process starts gets a process of its own.
  await cli(runtime, ['pending'], { SOMETHING_ELSE: '1' });
  expect((await residentsAfter(runtime, 1)).get(pid)).toBe(1);
  await cli(runtime, ['pending'], { LANG: 'C' });
  await cli(runtime, ['pending'], { NODE_OPTIONS: '--max-old-space-size=300' });
  // A process confined more than this one (no_new_privs, as a Landlock sandbox sets) gets its own too.
  await run('setpriv', ['--no-new-privs', '--', process.execPath, join(repoRoot, 'bin', 'airlock.js'), 'pending'], {
    env: h.processEnv({ XDG_RUNTIME_DIR: runtime, AIRLOCK_CLI_RESIDENT: 'always' }),
  });
  for (let i = 0; i < 100 && residentsUnder(runtime).size < 4; i++) await new Promise((r) => setTimeout(r, 100));
  expect(residentsUnder(runtime).size).toBe(4);
  expect(residentsUnder(runtime).get(pid)).toBe(1);

  const off = runtimeDir('off');
  await cli(off, ['pending'], { AIRLOCK_CLI_RESIDENT: 'off' });
  await new Promise((r) => setTimeout(r, 1000));
  expect(residentsUnder(off).size).toBe(0);
  expect(existsSync(join(off, 'airlock'))).toBe(false);
  expect(await cli(off, ['pending'], { AIRLOCK_CLI_RESIDENT: 'sometimes' })).toMatchObject({
    code: 1,
    stderr: expect.stringContaining('AIRLOCK_CLI_RESIDENT: expected auto, always or off'),
  });
});

test('a caller that goes away while its command runs takes the command with it: the resident process ends at once', async () => {
  const runtime = runtimeDir('caller-gone');
  await cli(runtime, ['pending']);
  const { pid } = await residentOf(runtime);
  // A Temporal address that accepts and never answers: the approval hangs in the resident process.
  let reached = false;
  const silent: Server = createServer(() => {
    reached = true;
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  const address = silent.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  try {
    const caller = spawn(process.execPath, [join(repoRoot, 'bin', 'airlock.js'), 'approve', 'hanging-job'], {
      env: h.processEnv({ XDG_RUNTIME_DIR: runtime, AIRLOCK_CLI_RESIDENT: 'always', TEMPORAL_ADDRESS: `127.0.0.1:${port}` }),
      stdio: 'ignore',
    });
    for (let i = 0; i < 100 && !reached; i++) await new Promise((r) => setTimeout(r, 100));
    expect(reached).toBe(true);
    expect(alive(pid)).toBe(true);
    caller.kill('SIGINT');
    expect(await gone(pid, 5_000)).toBe(true);
    expect(readdirSync(join(runtime, 'airlock')).filter((f) => f.endsWith('.sock'))).toEqual([]);
  } finally {
    silent.close();
  }
});

test('it ends after AIRLOCK_CLI_RESIDENT_IDLE without a command, and gives up its socket', async () => {
  const runtime = runtimeDir('idle');
  await cli(runtime, ['pending'], { AIRLOCK_CLI_RESIDENT_IDLE: '2s' });
  const { pid } = await residentOf(runtime);
  await cli(runtime, ['show', 'x'], { AIRLOCK_CLI_RESIDENT_IDLE: '2s' });
  expect(await gone(pid, 15_000)).toBe(true);
  expect(readdirSync(join(runtime, 'airlock')).filter((f) => f.endsWith('.sock'))).toEqual([]);
});

test('a folder or socket that is not this user\'s alone is never used: the command runs here', async () => {
  // A runtime folder another user owns.
  const theirs = runtimeDir('theirs');
  mkdirSync(join(theirs, 'airlock'), { mode: 0o700 });
  chownSync(join(theirs, 'airlock'), OTHER_UID, OTHER_UID);
  expect(await cli(theirs, ['show', 'x'])).toMatchObject({ code: 1, stderr: expect.stringContaining('no job x') });
  // A folder others may write.
  const open = runtimeDir('open');
  mkdirSync(join(open, 'airlock'));
  chmodSync(join(open, 'airlock'), 0o777);
  expect(await cli(open, ['show', 'x'])).toMatchObject({ code: 1, stderr: expect.stringContaining('no job x') });
  await new Promise((r) => setTimeout(r, 1000));
  expect(residentsUnder(theirs).size + residentsUnder(open).size).toBe(0);

  // A socket of another user's where ours would be: nothing connects to it.
  const planted = runtimeDir('planted');
  await cli(planted, ['pending']);
  const { pid } = await residentOf(planted);
  const socketName = readdirSync(join(planted, 'airlock')).find((f) => f.endsWith('.sock'));
  if (socketName === undefined) throw new Error('no socket');
  process.kill(pid, 'SIGKILL');
  await gone(pid);
  const socket = join(planted, 'airlock', socketName);
  rmSync(socket);
  let connections = 0;
  const impostor: Server = createServer((s) => {
    connections++;
    s.destroy();
  });
  await new Promise<void>((resolve) => impostor.listen(socket, resolve));
  try {
    chownSync(socket, OTHER_UID, OTHER_UID);
    expect(await cli(planted, ['show', 'x'])).toMatchObject({ code: 1, stderr: expect.stringContaining('no job x') });
    expect(connections).toBe(0);
  } finally {
    impostor.close();
  }
  expect(alive(pid)).toBe(false);
});
