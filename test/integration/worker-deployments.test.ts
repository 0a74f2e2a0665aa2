import { generateKeyPairSync } from 'node:crypto';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { temporal } from '@temporalio/proto';
import { AirlockClient } from '../../client/airlock-client';
import { parseConfig, type AirlockConfig } from '../../core/config/config';
import { runWorkers } from '../../workers/run-workers';
import { goalMarker, startGoalModel, type GoalModel } from '../helpers/goal-model';
import { startFullTemporal, type FullTemporal } from '../helpers/full-temporal';
import { spawnNode } from '../helpers/processes';
import { writeSignedWriteRules } from '../helpers/signed-writes';
import { testServer } from '../helpers/temporal-env';
import { expectRunReplays } from '../helpers/replays';

/**
 * Worker Deployments on the server the topology runs (1.32.2; the CLI's dev
 * server, 1.29, never tells a pinned job that its target changed). Build A
 * parks jobs; build B (a changed bundle) is promoted; A's parked jobs move to
 * B at once and complete there when approved, each approved write once; a job
 * of A in the middle of a tool call finishes on A; `deploy status` shows A
 * drained of jobs.
 */
let dir: string;
let root: string;
let server: FullTemporal | undefined;
let model: GoalModel;
let slow: Server;
let env: NodeJS.ProcessEnv;
let config: AirlockConfig;
let client: AirlockClient | undefined;
const held: ServerResponse[] = [];
const stops: AbortController[] = [];
const running: Promise<void>[] = [];
const reviewerKey = generateKeyPairSync('ed25519');
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function cli(args: string[]): Promise<{ code: number | null; output: string }> {
  const p = spawnNode('bin/airlock.js', args, env);
  return { code: await p.exited(), output: p.output() };
}

/** Build B: the same workflows in a changed bundle, so its default build id differs. */
function changedBundles(): { encoded: string; plain: string } {
  const out = { encoded: join(dir, 'bundle-b.js'), plain: join(dir, 'bundle-b.plain.js') };
  writeFileSync(out.encoded, `// build B\n${readFileSync(testServer.bundles.encoded, 'utf8')}`);
  writeFileSync(out.plain, `// build B\n${readFileSync(testServer.bundles.plain, 'utf8')}`);
  return out;
}

/** Runs workers in this process until the test ends; resolves once they poll (and a first build is current). */
async function startWorkers(roles: Array<'agent' | 'tools'>, bundles: { encoded: string; plain: string }): Promise<string[]> {
  const stop = new AbortController();
  stops.push(stop);
  const lines: string[] = [];
  await new Promise<void>((resolve, reject) => {
    running.push(runWorkers({ config, roles, workflowSource: { bundles }, signal: stop.signal, log: (l) => lines.push(l), onReady: resolve }).catch((err: unknown) => reject(err as Error)));
  });
  return lines;
}

async function versionOf(jobId: string): Promise<{ runId: string; buildId: string | undefined }> {
  const c = client;
  if (c === undefined) throw new Error('no client');
  const d = await c.client.workflow.getHandle(jobId).describe();
  return { runId: d.runId, buildId: d.raw.workflowExecutionInfo?.versioningInfo?.deploymentVersion?.buildId ?? undefined };
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-deploy-'));
  chmodSync(dir, 0o755);
  root = join(dir, 'share');
  mkdirSync(root);
  server = await startFullTemporal(dir);
  slow = createServer((_req, res) => {
    held.push(res);
  });
  await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r));
  const slowUrl = `http://127.0.0.1:${(slow.address() as AddressInfo).port}/slow`;
  model = await startGoalModel((job, turn) => {
    if (turn === 0 && job.startsWith('parked')) return [{ name: 'fs_write', arguments: { path: `${job}.log`, content: `${job}\n`, mode: 'append' } }];
    if (turn === 0 && job === 'busy') return [{ name: 'http_request', arguments: { method: 'GET', url: slowUrl } }];
    if (turn === 1) return [{ name: 'complete', arguments: { summary: 'done' } }];
    return [];
  });
  const { rules, reviewers } = writeSignedWriteRules(dir, reviewerKey.publicKey);
  const toolsConfig = join(dir, 'tools.json');
  writeFileSync(toolsConfig, JSON.stringify({ version: 1, roots: [root], hosts: { allowInternal: ['127.0.0.1'] } }));
  env = {
    PATH: process.env.PATH,
    HOME: dir,
    TEMPORAL_ADDRESS: server.address,
    AIRLOCK_DATA_DIR: join(dir, 'data'),
    AIRLOCK_RULES_FILE: rules,
    AIRLOCK_REVIEWER_KEYS: reviewers,
    AIRLOCK_TOOLS_CONFIG: toolsConfig,
    OPENAI_BASE_URL: model.baseUrl,
    AIRLOCK_LOG_LEVEL: 'warn',
  };
  expect(await cli(['setup'])).toMatchObject({ code: 0 });
  config = parseConfig(env);
}, 15 * 60_000);

afterAll(async () => {
  for (const res of held) res.destroy();
  for (const s of stops) s.abort();
  await Promise.allSettled(running);
  await client?.close();
  await model?.close();
  await new Promise((r) => slow?.close(r));
  await server?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

test('a promoted build takes over parked jobs at once; a job in a tool call finishes on its own build; deploy status shows the old build drained', async () => {
  await startWorkers(['agent', 'tools'], testServer.bundles);
  const c = await AirlockClient.connect(config);
  client = c;
  const statusA = JSON.parse((await cli(['deploy', 'status', '--json'])).output) as { current: string; versions: Array<{ buildId: string; status: string; running: number; parked: number }> };
  const buildA = statusA.current;
  expect(buildA).toMatch(/^\d+\.\d+\.\d+-[0-9a-f]{12}$/);

  const parked = ['parked-1', 'parked-2'];
  for (const jobId of [...parked, 'busy']) await c.startJob({ jobId, goal: `work ${goalMarker(jobId)}`, requester: 'bob' });
  for (const jobId of parked) {
    for (let i = 0; i < 240 && (await c.pendingOf(jobId)).pending.length === 0; i++) await sleep(250);
    expect((await c.pendingOf(jobId)).pending).toHaveLength(1);
  }
  // The busy job is inside its http_request: the tools worker holds the request open.
  for (let i = 0; i < 240 && held.length === 0; i++) await sleep(250);
  expect(held).toHaveLength(1);
  const before = Object.fromEntries(await Promise.all([...parked, 'busy'].map(async (id) => [id, await versionOf(id)] as const)));
  for (const id of [...parked, 'busy']) expect(before[id]?.buildId).toBe(buildA);

  // Build B's agent worker starts while A is current: it says how to move, and takes nothing yet.
  const linesB = await startWorkers(['agent'], changedBundles());
  const buildB = /workers polling .* build (\S+)$/m.exec(linesB.join('\n'))?.[1];
  expect(buildB).toBeDefined();
  expect(buildB).not.toBe(buildA);
  expect(linesB.join('\n')).toContain(`build ${buildA} is current`);

  const promoted = await cli(['deploy', 'promote', String(buildB)]);
  expect(promoted).toMatchObject({ code: 0 });
  expect(promoted.output).toContain(`build ${String(buildB)} is current (was ${buildA})`);
  expect(promoted.output).toMatch(/woke 2 parked jobs/);

  // Each parked job continued as new onto B, its request still waiting.
  for (const jobId of parked) {
    for (let i = 0; i < 120 && (await versionOf(jobId)).buildId !== buildB; i++) await sleep(250);
    const now = await versionOf(jobId);
    expect(now.buildId).toBe(buildB);
    expect(now.runId).not.toBe(before[jobId]?.runId);
    expect((await c.pendingOf(jobId)).pending).toHaveLength(1);
  }
  // The busy job did not move: it is still the run A started.
  expect(await versionOf('busy')).toEqual(before.busy);

  // Released, the busy job completes on A; approved, the parked ones complete on B, each write once.
  held[0]?.writeHead(200, { 'content-type': 'text/plain' }).end('slow answer');
  for (const jobId of parked) {
    const r = (await c.pendingOf(jobId)).pending[0];
    if (r === undefined) throw new Error(`${jobId} has no pending request`);
    const outcome = await c.decide(jobId, { decision: 'approve', requestId: r.requestId, reviewer: 'alice', signingKey: reviewerKey.privateKey, workerWaitMs: 10_000 });
    expect(outcome.accepted).toBe(true);
  }
  for (const jobId of [...parked, 'busy']) expect((await c.result(jobId)).status).toBe('completed');
  expect(await versionOf('busy')).toEqual(before.busy);
  for (const jobId of parked) {
    expect((await versionOf(jobId)).buildId).toBe(buildB);
    expect(readFileSync(join(root, `${jobId}.log`), 'utf8')).toBe(`${jobId}\n`);
  }
  expect(model.toolResults.get('busy')?.join('\n')).toContain('slow answer');

  // The run that moved replays against the workflow code, its continue-as-new onto B included.
  const firstRun = await c.client.workflow.getHandle('parked-1', before['parked-1']?.runId).fetchHistory();
  expect(firstRun.events?.at(-1)?.eventType).toBe(temporal.api.enums.v1.EventType.EVENT_TYPE_WORKFLOW_EXECUTION_CONTINUED_AS_NEW);
  await expectRunReplays(firstRun, 'parked-1', 'moved to build B');

  // A holds no job any more; B is current.
  const status = await cli(['deploy', 'status', '--json']);
  const after = JSON.parse(status.output) as typeof statusA;
  expect(after.current).toBe(buildB);
  expect(after.versions.find((v) => v.buildId === buildA)).toMatchObject({ running: 0, parked: 0 });
  expect(after.versions.find((v) => v.buildId === buildA)?.status).toMatch(/^(draining|drained)$/);
  const text = await cli(['deploy', 'status']);
  expect(text.output).toMatch(new RegExp(`${buildA.replace(/[.+]/g, '\\$&')}\\s+(draining|drained)\\s+0\\s+0`));
}, 10 * 60_000);
