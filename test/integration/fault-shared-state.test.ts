import { generateKeyPairSync } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AirlockClient } from '../../client/airlock-client';
import type { AuditEvent } from '../../core/audit/events';
import { parseConfig } from '../../core/config/config';
import { noticeEventId } from '../../core/reviewer/notification';
import { loadOrCreateGrantKeyPair } from '../../host/keys/grant-keys';
import { goalMarker, startGoalModel, type GoalModel } from '../helpers/goal-model';
import { startPrivatePostgres, type PrivatePostgres } from '../helpers/private-postgres';
import { spawnNode, type Spawned } from '../helpers/processes';
import { writeSignedWriteRules } from '../helpers/signed-writes';
import { createTestEnv, type TestEnv } from '../helpers/temporal-env';

/**
 * Replicas that never run a call twice, tried the hard way: one
 * PostgreSQL holding all shared state, two agent workers and three tools
 * workers (one machine's folders) as real processes, a `kill -9` of a
 * random one every few seconds (restarted at once) and one PostgreSQL
 * restart, while jobs of approved, signed, side-effecting calls run. Each
 * call appends its own line to a file of its own: the ground truth.
 */
const JOBS = Number(process.env.AIRLOCK_FAULT_JOBS ?? 60);
const CALLS = 5;
const AT_ONCE = 12;

let env: TestEnv;
let pg: PrivatePostgres;
let model: GoalModel;
let client: AirlockClient;
let hook: Server;
let dir: string;
let root: string;
let url: string;
const delivered = new Map<string, number>();
const reviewerKey = generateKeyPairSync('ed25519');

interface Worker {
  readonly kind: 'agent' | 'tools';
  readonly script: string;
  readonly env: NodeJS.ProcessEnv;
  proc: Spawned;
}
const workers: Worker[] = [];

const fileOf = (job: string, k: number) => join(root, `${job}-call-${k}.log`);
const lineOf = (job: string, k: number) => `${job} call-${k}\n`;

beforeAll(async () => {
  env = await createTestEnv();
  pg = await startPrivatePostgres();
  await pg.sql('CREATE DATABASE airlock');
  url = pg.url('airlock');
  dir = mkdtempSync(join(tmpdir(), 'airlock-fault-'));
  root = join(dir, 'root');
  mkdirSync(root);
  model = await startGoalModel((job, turn) => {
    if (turn === 0) return Array.from({ length: CALLS }, (_, k) => ({ name: 'fs_write', arguments: { path: `${job}-call-${k}.log`, content: lineOf(job, k), mode: 'append' } }));
    if (turn === 1) return [{ name: 'complete', arguments: { summary: `appended ${CALLS} lines` } }];
    return [];
  });
  hook = createServer((req, res) => {
    let text = '';
    req.on('data', (c: Buffer) => (text += c.toString('utf8')));
    req.on('end', () => {
      const id = (JSON.parse(text) as { eventId: string }).eventId;
      delivered.set(id, (delivered.get(id) ?? 0) + 1);
      res.writeHead(204).end();
    });
  });
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve));

  // What every machine is given: the grant key pair (private on agents, public on tools), the rules, the reviewer's public key.
  const keys = join(dir, 'keys');
  loadOrCreateGrantKeyPair(join(keys, 'grant.pem'), join(keys, 'grant.pub.pem'));
  const { rules, reviewers } = writeSignedWriteRules(dir, reviewerKey.publicKey, join(keys, 'reviewers.yaml'));
  const common = { PATH: process.env.PATH, HOME: process.env.HOME, TEMPORAL_ADDRESS: env.address, TEMPORAL_NAMESPACE: env.namespace, AIRLOCK_DATABASE_URL: url, AIRLOCK_ROOTS: root };
  const setup = spawnNode('bin/airlock.js', ['setup'], { ...common, AIRLOCK_DATA_DIR: join(dir, 'setup') });
  expect(await setup.exited()).toBe(0);
  for (let i = 0; i < 2; i++) {
    workers.push({
      kind: 'agent',
      script: 'dist/workers/airlock-agent.js',
      env: {
        ...common,
        AIRLOCK_DATA_DIR: join(dir, `agent-${i}`),
        OPENAI_BASE_URL: model.baseUrl,
        AIRLOCK_RULES_FILE: rules,
        AIRLOCK_GRANT_KEY: join(keys, 'grant.pem'),
        AIRLOCK_GRANT_PUBLIC_KEY: join(keys, 'grant.pub.pem'),
        AIRLOCK_REVIEWER_KEYS: reviewers,
        AIRLOCK_NOTIFY_URLS: `generic:http://127.0.0.1:${(hook.address() as AddressInfo).port}/hook`,
        AIRLOCK_NOTIFY_BACKOFF: '1s',
      },
      proc: undefined as unknown as Spawned,
    });
  }
  for (let i = 0; i < 3; i++) {
    workers.push({ kind: 'tools', script: 'dist/workers/airlock-tools.js', env: { ...common, AIRLOCK_DATA_DIR: join(dir, `tools-${i}`), AIRLOCK_GRANT_PUBLIC_KEY: join(keys, 'grant.pub.pem') }, proc: undefined as unknown as Spawned });
  }
  for (const w of workers) w.proc = spawnNode(w.script, [], w.env);
  for (const w of workers) await w.proc.waitFor(/workers polling/);
  client = await AirlockClient.connect(parseConfig({ TEMPORAL_ADDRESS: env.address, TEMPORAL_NAMESPACE: env.namespace }));
}, 180_000);

afterAll(async () => {
  for (const w of workers) w.proc?.child.kill('SIGKILL');
  await client?.close();
  await model?.close();
  await new Promise<void>((resolve) => (hook === undefined ? resolve() : hook.close(() => resolve())));
  await env?.close();
  await pg?.stop();
  if (dir !== undefined) rmSync(dir, { recursive: true, force: true });
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Starts a job and approves each of its requests (signed) until it ends; its result. */
async function drive(jobId: string): Promise<string> {
  await client.startJob({ jobId, goal: `append one line per file ${goalMarker(jobId)}`, requester: 'bob' });
  const decided = new Set<string>();
  for (;;) {
    const found = await client.pendingOf(jobId);
    if (found.execution !== 'RUNNING') break;
    for (const r of found.pending) {
      if (decided.has(r.requestId)) continue;
      try {
        const outcome = await client.decide(jobId, { decision: 'approve', requestId: r.requestId, reviewer: 'alice', signingKey: reviewerKey.privateKey, workerWaitMs: 5_000 });
        if (outcome.accepted === false && outcome.code !== 'already_decided') throw new Error(`decision on ${jobId} ${r.requestId} rejected: ${outcome.code} ${outcome.reason}`);
      } catch (err) {
        // Decided meanwhile (a queued decision applied, seen from a memo not yet updated): nothing left to do for it.
        if (!(err instanceof Error && /has no pending request/.test(err.message))) throw err;
      }
      decided.add(r.requestId);
    }
    await sleep(250);
  }
  return (await client.result(jobId)).status;
}

test(`${JOBS} jobs of ${CALLS} approved calls while workers are killed at random and PostgreSQL restarts: every call ran exactly once and was reported truthfully`, async () => {
  const started = Date.now();
  const kills = { agent: 0, tools: 0 };
  let running = true;
  // Somebody is killed every 2-4 s and restarted at once; the jobs go on through it.
  const killer = (async () => {
    while (running) {
      await sleep(2000 + Math.random() * 2000);
      if (!running) break;
      const w = workers[Math.floor(Math.random() * workers.length)]!;
      w.proc.child.kill('SIGKILL');
      await w.proc.exited();
      kills[w.kind]++;
      w.proc = spawnNode(w.script, [], w.env);
    }
  })();
  const ids = Array.from({ length: JOBS }, (_, i) => `fault-${i}`);
  const results = new Map<string, string>();
  let next = 0;
  let restarted = false;
  await Promise.all(
    Array.from({ length: AT_ONCE }, async () => {
      while (next < ids.length) {
        const jobId = ids[next++]!;
        results.set(jobId, await drive(jobId));
        // Once, a third of the way in: the database goes away for a few seconds.
        if (!restarted && results.size >= JOBS / 3) {
          restarted = true;
          await pg.halt();
          await sleep(4000);
          await pg.resume();
        }
      }
    }),
  );
  running = false;
  await killer;
  const seconds = Math.round((Date.now() - started) / 1000);

  // Ground truth: one line per call, in its own file.
  let duplicated = 0;
  let lost = 0;
  for (const job of ids) {
    for (let k = 0; k < CALLS; k++) {
      const lines = existsSync(fileOf(job, k)) ? readFileSync(fileOf(job, k), 'utf8').split('\n').filter((l) => l !== '') : [];
      if (lines.length > 1) duplicated++;
      if (lines.length === 0) lost++;
    }
  }
  // What the model was told of each call: that it ran (now, before a crash, or — when its worker died after recording the
  // outcome and before Temporal heard of it — that it already ran and succeeded, its output not kept), never anything else.
  let reportedWrongly = 0;
  let toldAlreadyRan = 0;
  for (const job of ids) {
    const told = model.toolResults.get(job) ?? [];
    toldAlreadyRan += told.filter((t) => /^This call already ran at \S+ \(it succeeded/.test(t)).length;
    if (told.length !== CALLS || told.some((t) => !/^(wrote \d+ bytes to |Done: this call's effect is in place|This call already ran at \S+ \(it succeeded)/.test(t))) {
      reportedWrongly++;
      // What it was told instead, so a failure says which call and how.
      process.stderr.write(`fault run: ${job} was told ${told.length} result(s): ${JSON.stringify(told.map((t) => t.slice(0, 300)))}\n`);
    }
  }
  // The database: one outcome per call, one audit row per event.
  const outcomes = await pg.sql<{ ok: boolean; reconciled: string | null }>(`SELECT (outcome::json->>'ok')::boolean AS ok, outcome::json->>'reconciled' AS reconciled FROM airlock_nonces`, [], 'airlock');
  const executed = await pg.sql<{ job_id: string; call: string; n: number }>(
    `SELECT job_id, event::json->'data'->>'callId' AS call, count(*)::int AS n FROM airlock_audit WHERE type = 'tool_executed' GROUP BY 1, 2`,
    [],
    'airlock',
  );
  const decidedRows = await pg.sql<{ n: number }>(`SELECT count(*)::int AS n FROM airlock_audit WHERE type = 'approval_decided'`, [], 'airlock');
  // Notifications: every approval request's notice reached the endpoint.
  const requested = (await pg.sql<{ event: string }>(`SELECT event FROM airlock_audit WHERE type IN ('approval_requested', 'approval_decided')`, [], 'airlock')).map((r) => JSON.parse(r.event) as AuditEvent);
  for (let i = 0; i < 60 && requested.some((e) => !delivered.has(noticeEventId(e))); i++) await sleep(500);
  const undelivered = requested.filter((e) => !delivered.has(noticeEventId(e))).length;
  const twice = [...delivered.values()].filter((n) => n > 1).length;
  const reconciled = outcomes.filter((o) => o.reconciled !== null).map((o) => o.reconciled);

  process.stderr.write(
    `fault run: ${JOBS} jobs, ${JOBS * CALLS} approved calls in ${seconds} s; kill -9: ${kills.agent} agent, ${kills.tools} tools workers; 1 PostgreSQL restart; ` +
      `duplicated ${duplicated}, lost ${lost}, reported wrongly ${reportedWrongly}; settled by reconciliation: ${reconciled.filter((r) => r === 'ran_before').length} ran_before, ` +
      `${reconciled.filter((r) => r === 'ran_now').length} ran_now, ${reconciled.filter((r) => r === 'unknown').length} unknown; ` +
      `stored outcome reported again: ${toldAlreadyRan}; ` +
      `notices ${requested.length}, undelivered ${undelivered}, delivered more than once ${twice}\n`,
  );
  expect([...results.values()].filter((s) => s !== 'completed')).toEqual([]);
  expect({ duplicated, lost, reportedWrongly }).toEqual({ duplicated: 0, lost: 0, reportedWrongly: 0 });
  expect(outcomes).toHaveLength(JOBS * CALLS);
  expect(outcomes.every((o) => o.ok)).toBe(true);
  expect(executed).toHaveLength(JOBS * CALLS);
  expect(executed.every((r) => r.n === 1)).toBe(true);
  expect(decidedRows).toEqual([{ n: JOBS * CALLS }]);
  expect(kills.agent + kills.tools).toBeGreaterThan(0);
  expect(undelivered).toBe(0);
  // A notice is sent at least once; twice only when a worker died between the endpoint's answer and recording it.
  expect(twice).toBeLessThanOrEqual(kills.agent);
}, 20 * 60_000);
