import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import { promisify } from 'node:util';
import { commands } from '../../cli/command-registry';
import { isGroup } from '../../cli/command';
import { auditEventTypes } from '../../core/audit/events';
import { JobHarness } from '../helpers/job-harness';
import { repoRoot } from '../helpers/processes';
import { killResidentsUnder } from '../helpers/resident-processes';

/**
 * The CLI starts fast because each command loads only what it uses. These
 * tests run the built CLI with a reporter preloaded and look at what it
 * loaded, so a heavy import that creeps back into a light command fails here.
 */

const run = promisify(execFile);
const reporter = join(repoRoot, 'dist', 'test', 'helpers', 'report-loaded-modules.js');
/** Never needed to talk to a job: the worker side, model clients, SQLite and PostgreSQL, browsers. */
const HEAVY = ['@temporalio/worker', 'openai', 'better-sqlite3', 'pg', 'playwright-core'];
/** Airlock's own worker-side code and the dev stack. */
const DEV_STACK = [join('dist', 'workers'), join('dist', 'activities'), join('dist', 'ops', 'dev'), join('dist', 'servers', 'codec')].map((dir) => `${sep}${dir}${sep}`);

let h: JobHarness;
let dir: string;

beforeAll(async () => {
  h = await JobHarness.create({
    rules: {
      version: 1,
      rules: [{ id: 'approve-deletes', version: 1, name: 'Deleting needs approval', scope: { categories: ['delete'] }, action: 'request_approval', approval: { editable: ['recursive'] } }],
    },
  });
  dir = mkdtempSync(join(tmpdir(), 'airlock-startup-'));
});
afterAll(async () => {
  await h.close();
  rmSync(dir, { recursive: true, force: true });
});

interface Loaded {
  readonly code: number;
  readonly stdout: string;
  readonly stderr: string;
  /** Packages from node_modules, by name (`@scope/name` or `name`). */
  readonly packages: string[];
  readonly files: string[];
  /** Which protobuf tree the CLI's stand-in gave `@temporalio/proto`: unread, smaller or package (undefined: no stand-in). */
  readonly protoTree: string | undefined;
}

let runs = 0;

/** Runs the built CLI against the harness's namespace and reports what the process loaded. */
async function cli(args: string[]): Promise<Loaded> {
  const report = join(dir, `modules-${runs++}.txt`);
  let out: { code: number; stdout: string; stderr: string };
  try {
    const done = await run(process.execPath, ['--require', reporter, join(repoRoot, 'bin', 'airlock.js'), ...args], {
      env: h.processEnv({ LOADED_MODULES_REPORT: report }),
      timeout: 60_000,
    });
    out = { code: 0, ...done };
  } catch (err) {
    const e = err as { code?: unknown; stdout?: string; stderr?: string };
    out = { code: typeof e.code === 'number' ? e.code : -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
  const lines = readFileSync(report, 'utf8').split('\n').filter((f) => f !== '');
  const files = lines.filter((l) => !l.startsWith('proto-tree: '));
  const packages = new Set(files.map(packageOf).filter((p) => p !== undefined));
  const tree = lines.find((l) => l.startsWith('proto-tree: '))?.slice('proto-tree: '.length);
  return { ...out, packages: [...packages].sort(), files, protoTree: tree };
}

/** The package a loaded file belongs to (the innermost node_modules), if any. */
function packageOf(file: string): string | undefined {
  const parts = file.split(`${sep}node_modules${sep}`);
  if (parts.length < 2) return undefined;
  const [first = '', second = ''] = (parts[parts.length - 1] ?? '').split(sep);
  return first.startsWith('@') ? `${first}/${second}` : first;
}

const temporalPackages = (loaded: Loaded) => loaded.packages.filter((p) => p.startsWith('@temporalio/'));
const heavyPackages = (loaded: Loaded) => loaded.packages.filter((p) => HEAVY.includes(p));
const devStackFiles = (loaded: Loaded) => loaded.files.filter((f) => DEV_STACK.some((d) => f.includes(d)));

test('the reporter sees what a command loads', async () => {
  const out = await cli(['show', 'no-such-job']);
  expect(out.code).toBe(1);
  expect(out.packages).toContain('@temporalio/client');
  expect(out.files.some((f) => f.endsWith(join('dist', 'cli', 'main.js')))).toBe(true);
});

test('--help loads no package at all, so it starts about as fast as node itself', async () => {
  const out = await cli(['--help']);
  expect(out.code).toBe(0);
  expect(out.stdout).toMatch(/approve .*Approve a pending request/);
  expect(temporalPackages(out)).toEqual([]);
  expect(out.packages).toEqual([]);
  expect(out.protoTree).toBe('unread');
  // The commands that serve or run workers keep the package's own tree (cli/startup/proto-tree.ts): no stand-in at all.
  for (const serving of ['dev', 'worker', 'topology', 'inbox', 'mcp', 'codec-server', 'replay']) {
    expect({ serving, tree: (await cli([serving, '--help'])).protoTree }).toEqual({ serving, tree: undefined });
  }
  const sub = await cli(['rules', 'test', '--help']);
  expect(sub.stdout).toMatch(/^Dry-run one call/);
  expect(sub.packages).toEqual([]);
  for (const args of [[], ['help', 'approve'], ['rules'], ['--version']]) {
    const plain = await cli(args);
    expect({ args, code: plain.code, packages: plain.packages }).toEqual({ args, code: 0, packages: [] });
  }
  // Anything else is parsed by commander, and by nothing more until the command runs.
  const parsed = await cli(['completion', 'bash']);
  expect({ code: parsed.code, packages: parsed.packages }).toEqual({ code: 0, packages: ['commander'] });
  expect(devStackFiles(parsed)).toEqual([]);
});

test.each([
  [['frobnicate']],
  [['approve', 'job-x', '--set', 'novalue']],
  [['show']],
  [['pending', 'extra']],
  [['pending', '--limit', '0']],
  [['pending', '--page', 'garbage']],
  [['deny', 'job-x', '--bogus']],
  [['run']],
  [['worker', '--queue', 'nowhere']],
  [['dev', 'extra']],
  [['judge', 'eval']],
  [['cancel']],
  [['run', '--goal', 'x', '--new-run']],
  [['approve', 'job-x', '--bogus']],
  [['rules', 'frobnicate']],
  [['agent', 'add']],
  [['agent', 'add', 'bad name']],
])('the usage error of %j loads no Temporal package', async (args) => {
  const out = await cli(args);
  expect(out.code).toBe(2);
  expect(out.stderr.trim().split('\n')).toHaveLength(1);
  expect(temporalPackages(out)).toEqual([]);
  expect(heavyPackages(out)).toEqual([]);
  expect(devStackFiles(out)).toEqual([]);
});

test('pending, show and approve load the Temporal client and nothing of the worker or dev stack', async () => {
  writeFileSync(join(h.root, 'old.tar'), 'old backup');
  const { jobId } = await h.start({
    script: {
      turns: [
        { tool_calls: [{ name: 'fs_delete', arguments: { path: 'old.tar' } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] },
      ],
    },
  });
  await h.waitForPending(jobId);

  // Visibility is eventually consistent: poll until the job is listed.
  let pending = await cli(['pending']);
  for (let i = 0; i < 50 && !pending.stdout.includes(jobId); i++) {
    await new Promise((r) => setTimeout(r, 200));
    pending = await cli(['pending']);
  }
  const show = await cli(['show', jobId]);
  const approve = await cli(['approve', jobId, '--set', 'recursive=false', '--reviewer', 'alice', '--reason', 'startup test']);
  expect(pending).toMatchObject({ code: 0, stdout: expect.stringMatching(new RegExp(`^${jobId} +[0-9a-f]{8} +fs_delete `, 'm')) });
  expect(show).toMatchObject({ code: 0, stdout: expect.stringContaining('awaiting_approval') });
  expect(approve).toMatchObject({ code: 0, stdout: expect.stringMatching(/^accepted: request .* is approved/) });

  for (const out of [pending, show, approve]) {
    expect(out.packages).toContain('@temporalio/client');
    // The Temporal API's tree without Temporal Cloud's part (cli/startup/proto-tree.ts), built by `npm run build`.
    expect(out.protoTree).toBe('smaller');
    expect(heavyPackages(out)).toEqual([]);
    expect(devStackFiles(out)).toEqual([]);
  }
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
});

test('a command the resident CLI process runs loads nothing in its own process but node builtins and the short client', async () => {
  // One report file and one runtime folder for both runs: the environment is part of the resident process's identity.
  const runtime = mkdtempSync(join(dir, 'run-'));
  const report = join(dir, 'resident-modules.txt');
  const env = h.processEnv({ LOADED_MODULES_REPORT: report, XDG_RUNTIME_DIR: runtime, AIRLOCK_CLI_RESIDENT: 'always' });
  const show = () => run(process.execPath, ['--require', reporter, join(repoRoot, 'bin', 'airlock.js'), 'show', 'no-such-job'], { env, timeout: 60_000 }).catch((e: { stderr?: string }) => e);
  const loaded = () => readFileSync(report, 'utf8').split('\n').filter((f) => f !== '' && !f.startsWith('proto-tree: '));
  try {
    await show();
    expect(loaded().some((f) => f.includes(`${sep}@temporalio${sep}client${sep}`))).toBe(true);
    // The first run started the resident process; the next one is passed to it once it listens.
    const sockets = () => (existsSync(join(runtime, 'airlock')) ? readdirSync(join(runtime, 'airlock')).filter((f) => f.endsWith('.sock')) : []);
    for (let i = 0; i < 200 && sockets().length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(sockets()).toHaveLength(1);
    expect(await show()).toMatchObject({ stderr: expect.stringContaining('no job no-such-job') });
    const own = loaded().map((f) => f.slice(repoRoot.length + 1));
    expect(own.sort()).toEqual(
      ['bin/airlock.js', 'dist/client/cli-name.js', 'dist/cli/private-folder.js', 'dist/cli/resident/client.js', 'dist/cli/resident/place.js', 'dist/cli/resident/protocol.js', 'dist/test/helpers/report-loaded-modules.js'].sort(),
    );
  } finally {
    killResidentsUnder(runtime);
  }
});

test('agent add, list and revoke --keep-requests load no Temporal client or worker: tokens are a local store', async () => {
  const add = await cli(['agent', 'add', 'startup-bot', '--json']);
  const list = await cli(['agent', 'list']);
  // Without --keep-requests it withdraws the agent's waiting requests, which asks its job on the Temporal server.
  const revoke = await cli(['agent', 'revoke', 'startup-bot', '--keep-requests']);
  expect(add).toMatchObject({ code: 0, stdout: expect.stringContaining('"agent": "startup-bot"') });
  expect(list).toMatchObject({ code: 0, stdout: expect.stringMatching(/^startup-bot +\S+ +- +never$/m) });
  expect(revoke.code).toBe(0);
  for (const out of [add, list, revoke]) {
    // The configuration's module brings @temporalio/common, as for every command that reads it; SQLite is the store.
    expect(temporalPackages(out).filter((p) => p !== '@temporalio/common')).toEqual([]);
    expect(heavyPackages(out)).toEqual(['better-sqlite3']);
    expect(devStackFiles(out)).toEqual([]);
  }
});

test('the registry spells out the audit event types the audit command takes', () => {
  const audit = commands.find((c) => c.name === 'audit');
  expect(audit !== undefined && !isGroup(audit) ? audit.usage : '').toContain(`--type ${auditEventTypes.slice(0, 2).join('|')}|…`);
});
