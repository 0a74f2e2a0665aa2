import { execFile } from 'node:child_process';
import { existsSync, lstatSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../helpers/ports';
import { spawnNode, repoRoot, type Spawned } from '../helpers/processes';
import { testServer } from '../helpers/temporal-env';

const run = promisify(execFile);
let dir: string;
let env: NodeJS.ProcessEnv;
let grpc: string;
let running: Spawned | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-dev-'));
  grpc = `127.0.0.1:${await freePort()}`;
  env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    TEMPORAL_ADDRESS: grpc,
    AIRLOCK_UI_PORT: String(await freePort()),
    AIRLOCK_DATA_DIR: join(dir, 'data'),
    // The CLI the suite already resolved: this test is about `airlock dev`, not about building it.
    TEMPORAL_CLI: testServer.cli,
    AIRLOCK_REVIEWER: 'owner',
  };
});
afterAll(() => {
  if (running !== undefined) process.kill(-running.child.pid!, 'SIGKILL');
  rmSync(dir, { recursive: true, force: true });
});

/** Processes whose command line mentions this test's data folder. */
function leftovers(): string[] {
  if (!existsSync('/proc')) return [];
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      const cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8').replace(/\0/g, ' ');
      if (cmd.includes(dir)) found.push(`${pid}: ${cmd}`);
    } catch {
      // Gone while we looked.
    }
  }
  return found;
}

async function airlock(args: string[]): Promise<string> {
  const { stdout } = await run(process.execPath, [join(repoRoot, 'bin', 'airlock.js'), ...args], { env });
  return stdout;
}

/** The CLI's exit code, stdout and stderr, also when it fails. */
async function airlockStatus(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    return { code: 0, stdout: await airlock(args), stderr: '' };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

async function startDev(args: string[]): Promise<Spawned> {
  const dev = spawnNode('bin/airlock.js', ['dev', ...args], env, { detached: true });
  running = dev;
  await dev.waitFor(/airlock dev is running/);
  return dev;
}

/** Ctrl-C in a terminal signals the whole foreground process group. */
async function ctrlC(dev: Spawned): Promise<number | null> {
  process.kill(-dev.child.pid!, 'SIGINT');
  const code = await dev.exited();
  running = undefined;
  return code;
}

async function pendingJobs(): Promise<Array<{ jobId: string }>> {
  for (let i = 0; i < 100; i++) {
    const jobs = JSON.parse(await airlock(['pending', '--json'])) as Array<{ jobId: string }>;
    if (jobs.length > 0) return jobs;
    await new Promise((r) => setTimeout(r, 300));
  }
  return [];
}

test('airlock dev: Web UI, search attributes, the demo job parks, Ctrl-C leaves nothing, a restart keeps the job, another build becomes current', async () => {
  const first = await startDev(['--demo']);
  const ui = first.output().match(/Web UI\s+(http:\/\/\S+)/)?.[1];
  expect(ui).toBeDefined();
  expect((await fetch(ui!)).status).toBe(200);
  expect(first.output()).toContain(`Temporal gRPC   ${grpc}`);

  const { stdout: attributes } = await run(testServer.cli, ['operator', 'search-attribute', 'list', '--address', grpc]);
  expect(attributes).toMatch(/AirlockStatus\s+Keyword/);
  expect(attributes).toMatch(/AirlockPendingTools\s+KeywordList/);

  await first.waitFor(/Demo job (demo-\S+) started/);
  const jobId = /Demo job (demo-\S+) started/.exec(first.output())![1]!;
  const jobs = await pendingJobs();
  expect(jobs.map((j) => j.jobId)).toContain(jobId);

  expect(await ctrlC(first)).toBe(0);
  expect(first.output()).toContain('airlock: dev stack stopped');
  expect(leftovers()).toEqual([]);

  // Same data folder: the parked job is still there and still parked.
  const second = await startDev([]);
  const state = JSON.parse(await airlock(['show', jobId, '--json'])) as { status: string; pending: unknown[] };
  expect(state).toMatchObject({ status: 'awaiting_approval' });
  expect(state.pending).toHaveLength(1);
  // The built-in rules want a signed decision: a name claimed without its key is refused, nothing runs.
  const claimed = await airlockStatus(['approve', jobId, '--reviewer', 'alice']);
  expect(claimed).toMatchObject({ code: 1, stdout: '', stderr: expect.stringMatching(/^rejected \(signature_required\)/) });
  // Refused before it is sent, saying where a key was looked for and how to make one the workers will read.
  expect(claimed.stderr).toContain(join(dir, 'data', 'keys', 'reviewers', 'alice.pem'));
  expect(claimed.stderr).toContain('npx airlock reviewer add alice');
  expect(claimed.stderr).toContain(join(dir, 'data', 'keys', 'reviewers.yaml'));
  expect((JSON.parse(await airlock(['show', jobId, '--json'])) as { pending: unknown[] }).pending).toHaveLength(1);
  // The local reviewer's key was made by `airlock dev` on first start; the CLI signs with it.
  expect(first.output()).toMatch(/created the signing key of reviewer owner/);
  expect(await airlock(['approve', jobId])).toMatch(/^accepted/);
  const demoFile = join(dir, 'data', 'sandbox', 'airlock-demo', 'old-backup.tar');
  for (let i = 0; i < 100 && existsSync(demoFile); i++) await new Promise((r) => setTimeout(r, 200));
  expect(existsSync(demoFile)).toBe(false);
  expect(existsSync(join(dir, 'data', 'sandbox', 'airlock-demo', 'backups', 'current.tar'))).toBe(true);

  const before = JSON.parse(await airlock(['deploy', 'status', '--json'])) as { current: string };
  expect(await ctrlC(second)).toBe(0);
  expect(leftovers()).toEqual([]);

  // Another build on the same data folder (an upgrade): the dev server runs one build, so it becomes current and takes new jobs.
  env = { ...env, AIRLOCK_BUILD_ID: 'dev-next' };
  const third = await startDev(['--demo']);
  expect(third.output()).toContain(`airlock: build dev-next is now current (was ${before.current})`);
  await third.waitFor(/Demo job (demo-\S+) started/);
  const next = /Demo job (demo-\S+) started/.exec(third.output())?.[1];
  for (let i = 0; i < 100 && !(await pendingJobs()).some((j) => j.jobId === next); i++) await new Promise((r) => setTimeout(r, 200));
  expect((await pendingJobs()).map((j) => j.jobId)).toContain(next);
  const status = JSON.parse(await airlock(['deploy', 'status', '--json'])) as { current: string; versions: Array<{ buildId: string; parked: number }> };
  expect(status.current).toBe('dev-next');
  expect(status.versions.find((v) => v.buildId === 'dev-next')?.parked).toBe(1);
  expect(await ctrlC(third)).toBe(0);
  expect(leftovers()).toEqual([]);

  // Keys, nonce store, audit log, the server's database and the sandbox: nothing is readable by others.
  const loose = tree(join(dir, 'data')).filter(({ mode, directory }) => mode !== (directory ? 0o700 : 0o600));
  expect(loose.map(({ path, mode }) => `${path} ${mode.toString(8)}`)).toEqual([]);
});

function tree(top: string): Array<{ path: string; mode: number; directory: boolean }> {
  const out = [{ path: top, mode: statSync(top).mode & 0o777, directory: true }];
  for (const entry of readdirSync(top, { withFileTypes: true })) {
    const path = join(top, entry.name);
    if (entry.isDirectory()) out.push(...tree(path));
    else out.push({ path, mode: lstatSync(path).mode & 0o777, directory: false });
  }
  return out;
}
