import { generateKeyPairSync } from 'node:crypto';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AirlockClient } from '../../client/airlock-client';
import { processAlive } from '../../ops/dev/process-info';
import { topologyDown } from '../../ops/topology/topology';
import { readTopologyState } from '../../ops/topology/state';
import { parseConfig } from '../../core/config/config';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CreateTaskResultSchema, type Task } from '@modelcontextprotocol/sdk/types.js';
import { goalMarker, startGoalModel, type GoalModel } from '../helpers/goal-model';
import { repoRoot, spawnNode } from '../helpers/processes';
import { writeSignedWriteRules } from '../helpers/signed-writes';

/**
 * The production shape as `airlock topology up` starts it: a private
 * PostgreSQL, the Temporal server built from its Go module on it, the Web
 * UI, the codec server, the approval page, two agent, two tools and a judge
 * worker. Jobs park; the server is killed with `kill -9` and PostgreSQL is
 * restarted under them; once both are back every approved call runs once.
 */
const JOBS = 6;
const CALLS = 2;

let dir: string;
let root: string;
let model: GoalModel;
let client: AirlockClient | undefined;
let env: NodeJS.ProcessEnv;
const reviewerKey = generateKeyPairSync('ed25519');

const fileOf = (job: string, k: number) => join(root, `${job}-call-${k}.log`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function cli(args: string[], withinMs = 60_000): Promise<{ code: number | null; output: string }> {
  const p = spawnNode('bin/airlock.js', args, env);
  let timer: NodeJS.Timeout | undefined;
  const code = await Promise.race([p.exited(), new Promise<'timeout'>((r) => (timer = setTimeout(() => r('timeout'), withinMs)))]);
  clearTimeout(timer);
  if (code === 'timeout') {
    p.child.kill('SIGKILL');
    throw new Error(`airlock ${args.join(' ')} took over ${withinMs} ms:\n${p.output()}`);
  }
  return { code, output: p.output() };
}

beforeAll(async () => {
  // Under /tmp: the private PostgreSQL runs as the postgres user, which must reach its folder.
  dir = mkdtempSync(join(tmpdir(), 'airlock-topology-'));
  chmodSync(dir, 0o755);
  root = join(dir, 'share');
  mkdirSync(root);
  model = await startGoalModel((job, turn) => {
    if (turn === 0) return Array.from({ length: CALLS }, (_, k) => ({ name: 'fs_write', arguments: { path: `${job}-call-${k}.log`, content: `${job} call-${k}\n`, mode: 'append' } }));
    if (turn === 1) return [{ name: 'complete', arguments: { summary: `appended ${CALLS} lines` } }];
    return [];
  });
  const { rules, reviewers } = writeSignedWriteRules(dir, reviewerKey.publicKey);
  env = {
    PATH: process.env.PATH,
    HOME: process.env.HOME,
    OPENAI_BASE_URL: model.baseUrl,
    AIRLOCK_RULES_FILE: rules,
    AIRLOCK_REVIEWER_KEYS: reviewers,
    AIRLOCK_ROOTS: root,
  };
});

afterAll(async () => {
  await client?.close();
  if (dir !== undefined && existsSync(join(dir, 'topology', 'topology.json'))) await topologyDown(join(dir, 'topology'), () => undefined).catch(() => undefined);
  await model?.close();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

/** An MCP client of its own `airlock mcp` process on this installation, as a Tasks client: agent `tasker`. */
async function mcpClient(base: number, topo: string): Promise<McpClient> {
  const childEnv = Object.fromEntries(Object.entries({ ...env, TEMPORAL_ADDRESS: `127.0.0.1:${base}`, AIRLOCK_DATA_DIR: join(topo, 'data') }).filter((e): e is [string, string] => e[1] !== undefined));
  const mcp = new McpClient({ name: 'topology-tasks', version: '1.0.0' });
  await mcp.connect(new StdioClientTransport({ command: process.execPath, args: [join(repoRoot, 'bin', 'airlock.js'), 'mcp', '--agent', 'tasker', '--wait', '1s'], env: childEnv, stderr: 'inherit' }));
  return mcp;
}

/** Approves each request of the job (signed) until it ends; its status. */
async function drive(c: AirlockClient, jobId: string): Promise<string> {
  const decided = new Set<string>();
  for (;;) {
    const found = await c.pendingOf(jobId);
    if (found.execution !== 'RUNNING') break;
    for (const r of found.pending) {
      if (decided.has(r.requestId)) continue;
      const outcome = await c.decide(jobId, { decision: 'approve', requestId: r.requestId, reviewer: 'alice', signingKey: reviewerKey.privateKey, workerWaitMs: 5_000 });
      if (outcome.accepted === false && outcome.code !== 'already_decided') throw new Error(`decision on ${jobId} rejected: ${outcome.code} ${outcome.reason}`);
      decided.add(r.requestId);
    }
    await sleep(250);
  }
  return (await c.result(jobId)).status;
}

test('up, park jobs, kill -9 the Temporal server and restart PostgreSQL, approve: every job completes, each approved call ran once; down stops it all', async () => {
  const topo = join(dir, 'topology');
  // A base with its derived ports free (up refuses otherwise, naming them).
  let up: { code: number | null; output: string } = { code: null, output: '' };
  let base = 0;
  for (let attempt = 0; attempt < 3; attempt++) {
    // 2000–9999 (the UI at +1000 included): apart from the full server of other tests (10000–19999) and the ports test servers take (20000–31999).
    base = 2_000 + Math.floor(Math.random() * 140) * 50;
    up = await cli(['topology', 'up', '--dir', topo, '--base-port', String(base)], 15 * 60_000);
    if (!/are in use on 127\.0\.0\.1/.test(up.output)) break;
  }
  expect(up.output).toMatch(/topology up in \d+ s: 10 processes/);
  expect(up).toMatchObject({ code: 0 });
  process.stderr.write(`topology: ${/topology up in \d+ s/.exec(up.output)?.[0] ?? '?'}\n`);

  const status = await cli(['topology', 'status', '--dir', topo, '--json']);
  expect(status).toMatchObject({ code: 0 });
  const parsed = JSON.parse(status.output) as { healthy: boolean; parts: Array<{ name: string; health: { healthy: boolean; detail: string } }> };
  expect(parsed.healthy).toBe(true);
  expect(parsed.parts.map((p) => p.name)).toEqual(['postgres', 'temporal', 'codec-server', 'ui', 'inbox', 'agent-1', 'agent-2', 'tools-1', 'tools-2', 'judge']);
  expect(parsed.parts.find((p) => p.name === 'temporal')?.health.detail).toMatch(/^server 1\.32\.2/);

  // A second up on the same folder is refused, and starts nothing.
  const again = await cli(['topology', 'up', '--dir', topo, '--base-port', String(base)]);
  expect(again.code).not.toBe(0);
  expect(again.output).toMatch(/a topology already runs in .*topology \(postgres pid \d+/);

  // The client of this installation: the topology's data folder holds the payload keys setup made.
  const c = await AirlockClient.connect(parseConfig({ TEMPORAL_ADDRESS: `127.0.0.1:${base}`, AIRLOCK_DATA_DIR: join(topo, 'data') }));
  client = c;
  const ids = Array.from({ length: JOBS }, (_, i) => `topo-${i}`);
  for (const jobId of ids) await c.startJob({ jobId, goal: `append one line per file ${goalMarker(jobId)}`, requester: 'bob' });
  for (const jobId of ids) {
    for (let i = 0; i < 240 && (await c.pendingOf(jobId)).pending.length < CALLS; i++) await sleep(250);
    expect((await c.pendingOf(jobId)).pending).toHaveLength(CALLS);
  }

  // An MCP client's call as a task parks in the agent's job like any call.
  const tasks = await mcpClient(base, topo);
  const created = await tasks.request({ method: 'tools/call', params: { name: 'fs_write', arguments: { path: 'from-mcp.log', content: 'tasker\n', mode: 'append' } } }, CreateTaskResultSchema, { task: { ttl: 3_600_000 } });
  const taskId = created.task.taskId;
  expect(created.task.status).toBe('working');
  await tasks.close();

  // The server dies outright, and the database restarts while it is down.
  const state = readTopologyState(join(topo, 'topology.json'));
  const temporal = state?.parts.find((p) => p.name === 'temporal');
  if (temporal === undefined) throw new Error('no temporal part in the state file');
  process.kill(temporal.pid, 'SIGKILL');
  for (let i = 0; i < 100 && processAlive(temporal.pid); i++) await sleep(100);
  expect(processAlive(temporal.pid)).toBe(false);
  const downNow = await cli(['topology', 'status', '--dir', topo]);
  expect(downNow.code).toBe(1);
  expect(downNow.output).toMatch(/temporal\s+DOWN/);
  expect(await cli(['topology', 'restart', 'postgres', '--dir', topo])).toMatchObject({ code: 0 });
  expect(await cli(['topology', 'restart', 'temporal', '--dir', topo], 180_000)).toMatchObject({ code: 0 });
  // The parts that talk to the server (workers, pages) reconnect after it is back: the topology is healthy again once they have.
  let healthyAgain = await cli(['topology', 'status', '--dir', topo, '--json']);
  for (let i = 0; i < 120 && !(JSON.parse(healthyAgain.output) as { healthy: boolean }).healthy; i++) {
    await sleep(500);
    healthyAgain = await cli(['topology', 'status', '--dir', topo, '--json']);
  }
  expect(JSON.parse(healthyAgain.output)).toMatchObject({ healthy: true });

  // Every parked job is still there; approved, each call runs exactly once.
  let mcpPending = (await c.pendingOf('mcp-tasker')).pending;
  for (let i = 0; i < 240 && mcpPending.length === 0; i++) {
    await sleep(250);
    mcpPending = (await c.pendingOf('mcp-tasker')).pending;
  }
  const mcpRequest = mcpPending[0];
  if (mcpRequest === undefined) throw new Error('the MCP call no longer waits in job mcp-tasker');
  expect(await c.decide('mcp-tasker', { decision: 'approve', requestId: mcpRequest.requestId, reviewer: 'alice', signingKey: reviewerKey.privateKey, workerWaitMs: 5_000 })).toMatchObject({ accepted: true });
  const results = await Promise.all(ids.map((jobId) => drive(c, jobId)));
  expect(results).toEqual(ids.map(() => 'completed'));
  for (const job of ids) {
    for (let k = 0; k < CALLS; k++) expect(readFileSync(fileOf(job, k), 'utf8')).toBe(`${job} call-${k}\n`);
  }
  // The task's id, from a new airlock mcp process after the Temporal server's kill -9: completed, the call ran once.
  const later = await mcpClient(base, topo);
  let task: Task = await later.experimental.tasks.getTask(taskId);
  for (let i = 0; i < 120 && task.status === 'working'; i++) {
    await sleep(250);
    task = await later.experimental.tasks.getTask(taskId);
  }
  await later.close();
  expect(task.status).toBe('completed');
  expect(readFileSync(join(root, 'from-mcp.log'), 'utf8')).toBe('tasker\n');
  await c.close();
  client = undefined;

  // Down stops exactly what up started.
  const pids = readTopologyState(join(topo, 'topology.json'))?.parts.map((p) => p.pid) ?? [];
  expect(pids).toHaveLength(10);
  const down = await cli(['topology', 'down', '--dir', topo], 180_000);
  expect(down).toMatchObject({ code: 0 });
  expect(down.output).toMatch(/topology down: 10 running processes stopped/);
  expect(pids.filter((pid) => processAlive(pid))).toEqual([]);
  const after = await cli(['topology', 'status', '--dir', topo]);
  expect(after.code).not.toBe(0);
  expect(after.output).toMatch(/no topology runs in/);
}, 25 * 60_000);
