import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Sqlite from 'better-sqlite3';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createToolGateActivities } from '../../activities/tool-gate';
import { parseConfig } from '../../core/config/config';
import { FailureTypes } from '../../core/temporal/failure-types';
import { createGrantVerifier, loadGrantPublicKey } from '../../host/keys/grant-keys';
import { SqliteNonceStore } from '../../host/stores/nonces/sqlite';
import { Roots } from '../../host/fs/roots';
import { loadToolsSetup } from '../../host/config/tools-config-file';
import { JobHarness } from '../helpers/job-harness';
import { spawnNode, type Spawned } from '../helpers/processes';

/**
 * Tools workers on two machines, as real processes: each started with its
 * own AIRLOCK_MACHINE, its own data folder (its own nonce store, so where
 * a call ran is on record) and the one tools config that says which
 * folders are on which machine. One job writes on both; each call runs on
 * the machine that owns its folder; a call for a machine whose worker is
 * not running says so in `show` and runs once that worker starts.
 */
let h: JobHarness;
let nasRoot: string;
let mediaRoot: string;
let toolsConfig: string;
const workers: Spawned[] = [];

let top: string;

beforeAll(async () => {
  top = mkdtempSync(join(tmpdir(), 'airlock-machines-'));
  nasRoot = join(top, 'nas-share');
  mediaRoot = join(top, 'media-library');
  mkdirSync(nasRoot);
  mkdirSync(mediaRoot);
  toolsConfig = join(top, 'tools.yaml');
  writeFileSync(toolsConfig, `version: 1\nmachines:\n  nas:\n    roots: [${nasRoot}]\n  media:\n    roots: [${mediaRoot}]\n`);
  const setup = await loadToolsSetup(parseConfig({ AIRLOCK_DATA_DIR: join(top, 'data'), AIRLOCK_TOOLS_CONFIG: toolsConfig }));
  h = await JobHarness.create({
    toolsInProcess: false,
    machines: setup.machines,
    detectorRoots: setup.roots,
    rules: {
      version: 1,
      rules: [
        { id: 'media-writes', version: 1, name: 'Writes on the media box need approval', scope: { tools: ['fs_write'], machines: ['media'] }, action: 'request_approval' },
      ],
    },
  });
}, 120_000);
afterAll(async () => {
  for (const w of workers) w.child.kill('SIGTERM');
  await Promise.all(workers.map((w) => w.exited()));
  await h?.close();
  rmSync(top, { recursive: true, force: true });
});

function startMachine(machine: string): Spawned {
  const data = join(h.dir, `data-${machine}`);
  mkdirSync(data, { recursive: true });
  const worker = h.spawnToolsWorker({ AIRLOCK_TOOLS_CONFIG: toolsConfig, AIRLOCK_MACHINE: machine, AIRLOCK_DATA_DIR: data });
  workers.push(worker);
  return worker;
}

/** The calls of a job whose nonces a machine's own store holds: the calls that machine's worker ran. */
function ranOn(machine: string, jobId: string): string[] {
  const file = join(h.dir, `data-${machine}`, 'tools', 'nonces.sqlite');
  if (!existsSync(file)) return [];
  const db = new Sqlite(file, { readonly: true });
  try {
    return (db.prepare('SELECT call_id FROM consumed_nonces WHERE job_id = ? ORDER BY call_id').all(jobId) as Array<{ call_id: string }>).map((r) => r.call_id);
  } finally {
    db.close();
  }
}

test('one job writes on both machines: each call runs on its own, and a call for a stopped machine waits for its worker', async () => {
  const nas = startMachine('nas');
  await nas.waitFor(/workers polling airlock-tools\.nas\b/);
  const { jobId } = await h.start({
    jobId: 'two-machines',
    script: {
      turns: [
        {
          tool_calls: [
            { name: 'fs_write', arguments: { path: join(nasRoot, 'from-job.txt'), content: 'on the nas\n' } },
            { name: 'fs_write', arguments: { path: join(mediaRoot, 'from-job.txt'), content: 'on the media box\n' } },
          ],
        },
        // Neither machine owns /etc; a move across machines cannot run on either.
        { tool_calls: [{ name: 'fs_write', arguments: { path: '/etc/airlock-test.txt', content: 'x' } }] },
        { tool_calls: [{ name: 'fs_move', arguments: { from: join(nasRoot, 'from-job.txt'), to: join(mediaRoot, 'moved.txt') } }] },
        { tool_calls: [{ name: 'complete', arguments: { summary: 'wrote on both' } }] },
      ],
    },
  });

  // The media write is gated, and parking it needs the media box's worker to observe the target: none runs yet.
  let shown = await h.cli(['show', jobId]);
  for (let i = 0; i < 100 && !shown.stdout.includes('waiting for a tools worker on media'); i++) {
    await new Promise((r) => setTimeout(r, 200));
    shown = await h.cli(['show', jobId]);
  }
  expect(shown.stdout).toMatch(/^ {2}waiting for a tools worker on media to take prepareApproval since \d{4}-\d\d-\d\dT/m);
  const json = JSON.parse((await h.cli(['show', jobId, '--json'])).stdout) as { inProgress: unknown[] };
  expect(json.inProgress).toEqual([expect.objectContaining({ activity: 'prepareApproval', queue: 'tools', machine: 'media', state: 'waiting' })]);

  const media = startMachine('media');
  await media.waitFor(/workers polling airlock-tools\.media\b/);
  await h.waitForPending(jobId);
  // The reviewer sees which machine: in the table, on the card, in the JSON.
  const table = await h.cli(['pending']);
  expect(table.stdout).toContain('media:');
  const pending = JSON.parse((await h.cli(['pending', '--json'])).stdout) as Array<{ pending: Array<{ machine?: string; observed: Array<{ path: string }> }> }>;
  expect(pending[0]?.pending[0]).toMatchObject({ machine: 'media', observed: [{ path: join(mediaRoot, 'from-job.txt') }] });
  expect((await h.cli(['show', jobId])).stdout).toContain(`fs_write media:${join(mediaRoot, 'from-job.txt')}`);

  expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: true });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });

  expect(readFileSync(join(nasRoot, 'from-job.txt'), 'utf8')).toBe('on the nas\n');
  expect(readFileSync(join(mediaRoot, 'from-job.txt'), 'utf8')).toBe('on the media box\n');
  // Where each call ran, from each machine's own nonce store.
  expect(ranOn('nas', jobId)).toEqual(['call_0_0']);
  expect(ranOn('media', jobId)).toEqual(['call_0_1']);

  const results = h.toolResults(jobId);
  expect(results.get('call_1_0')).toMatch(/^Not executed: "\/etc\/airlock-test.txt" is under no machine's roots \(nas: .*; media: .*\)/);
  expect(results.get('call_2_0')).toMatch(/^Not executed: the call spans two machines: .* is on nas, .* on media/);
  expect(existsSync('/etc/airlock-test.txt')).toBe(false);
  expect(existsSync(join(mediaRoot, 'moved.txt'))).toBe(false);
  expect(existsSync(join(nasRoot, 'from-job.txt'))).toBe(true);

  // The audit names the machine of each call that ran, and of the refused ones says why.
  const executed = h.audit(jobId, 'tool_executed');
  expect(executed.map((e) => [e.data.callId, e.data.machine])).toEqual([
    ['call_0_0', 'nas'],
    ['call_0_1', 'media'],
  ]);
  const [requested] = h.audit(jobId, 'approval_requested');
  expect(requested?.data).toMatchObject({ machine: 'media', target: `media:${join(mediaRoot, 'from-job.txt')}`, card: { machine: 'media' } });
  const denied = h.audit(jobId, 'policy_tool_denied');
  expect(denied.map((e) => [e.data.callId, e.data.ruleId])).toEqual([
    ['call_1_0', null],
    ['call_2_0', null],
  ]);
});

test('a tools worker refuses a call meant for another machine before it looks at anything', async () => {
  const nonces = new SqliteNonceStore(join(h.dir, 'refusal-nonces.sqlite'));
  const gate = createToolGateActivities({
    roots: await Roots.create([nasRoot]),
    nonces,
    verifier: createGrantVerifier(loadGrantPublicKey(h.keys.publicFile)),
    machine: 'nas',
  });
  const env = new MockActivityEnvironment();
  const args = { path: join(nasRoot, 'x.txt'), content: 'x' };
  await expect(env.run(gate.prepareApproval, { toolName: 'fs_write', args, machine: 'media' })).rejects.toMatchObject({
    type: FailureTypes.WrongMachine,
    message: 'this call is for machine media, but this tools worker is machine nas; it was not run',
  });
  // A forged call without a machine (as a single-machine job sends) is refused too.
  const forged = { jobId: 'j', callId: 'c', scope: {}, toolName: 'fs_write', args, ruleId: null, ruleVersion: null, grant: { claims: { v: 1 as const, jobId: 'j', callId: 'c', fingerprint: 'f'.repeat(64), nonce: 'ab'.repeat(16), expiresAt: Date.now() + 60_000 }, signature: 'forged' } };
  await expect(env.run(gate.execute, forged)).rejects.toMatchObject({ type: FailureTypes.WrongMachine });
  expect(existsSync(join(nasRoot, 'x.txt'))).toBe(false);
  await nonces.close();
});

test('`run --wait` says when a call waits for a machine whose tools worker is not running, and ends once it runs', async () => {
  const media = workers.find((w) => w.output().includes('airlock-tools.media'));
  media?.child.kill('SIGTERM');
  await media?.exited();
  writeFileSync(join(mediaRoot, 'catalog.txt'), 'films\n');
  h.replay.setScript({
    turns: [
      { tool_calls: [{ name: 'fs_chmod', arguments: { path: join(mediaRoot, 'catalog.txt'), mode: '640' } }] },
      { tool_calls: [{ name: 'complete', arguments: { summary: 'made the catalog private' } }] },
    ],
  });
  const run = spawnNode('bin/airlock.js', ['run', '--goal', 'make the media catalog private', '--id', 'waits-for-media', '--wait'], h.processEnv());
  await run.waitFor(/^ {2}waiting for a tools worker on media to take execute since \d{4}-/m, 30_000);
  const restarted = startMachine('media');
  await restarted.waitFor(/workers polling airlock-tools\.media\b/);
  expect(await run.exited()).toBe(0);
  expect(run.output()).toMatch(/job waits-for-media completed/);
  expect(ranOn('media', 'waits-for-media')).toEqual(['call_0_0']);
  expect(statSync(join(mediaRoot, 'catalog.txt')).mode & 0o777).toBe(0o640);
});
