import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client, Connection } from '@temporalio/client';
import { temporal } from '@temporalio/proto';
import { NativeConnection, Runtime } from '@temporalio/worker';
import { startDevServer } from '../ops/dev/dev-server';
import { freePort } from '../ops/dev/ports';
import { startReplayServer } from '../ops/dev/replay-server';
import { resolveTemporalCli } from '../ops/dev/temporal-cli';
import { parseConfig } from '../core/config/config';
import { AGENT_JOB_WORKFLOW, type AgentJobResult } from '../core/job/job-input';
import type { ReplayScript } from '../core/model/replay-script';
import { AirlockSearchAttributes } from '../core/temporal/search-attributes';
import { TaskQueues, queueRoles } from '../core/temporal/task-queues';
import { createWorkers } from '../workers/create-workers';
import { defaultWorkflowSource } from '../workers/workflow-code';
import { requireCurrent } from '../host/temporal/worker-deployments';
import { buildActivities } from '../workers/deps';
import { runtimeLogger } from '../workers/run-workers';
import { decideUpdate, stateQuery } from '../workflows/messages';

/**
 * Prints how many history events a job spends per allowed call and per
 * approved call, on a real dev server with the product's own workers.
 * Counts are deterministic but for extra workflow tasks when activities
 * finish in between; the script avoids queries while jobs run, so one run
 * is usually enough: `npm run measure:history` (`-- --events` lists the
 * approved call's job event by event).
 */
async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'airlock-measure-'));
  const root = join(dir, 'root');
  mkdirSync(root);
  for (let i = 0; i < 8; i++) writeFileSync(join(root, `f${i}.txt`), `file ${i}`);
  const rulesFile = join(dir, 'rules.yaml');
  writeFileSync(rulesFile, 'version: 1\nrules:\n  - { id: gate, version: 1, name: gate, scope: { categories: [delete] }, action: request_approval }\n');

  const cli = await resolveTemporalCli();
  const server = await startDevServer({ cli: cli.path, port: await freePort() });
  const replay = await startReplayServer({ script: { turns: [] } });
  const config = parseConfig({
    TEMPORAL_ADDRESS: server.address,
    AIRLOCK_DATA_DIR: join(dir, 'data'),
    AIRLOCK_ROOTS: root,
    AIRLOCK_RULES_FILE: rulesFile,
    OPENAI_BASE_URL: replay.baseUrl,
    AIRLOCK_LOG_LEVEL: 'error',
  });
  Runtime.install({ logger: runtimeLogger('error'), shutdownSignals: [] });
  const native = await NativeConnection.connect({ address: server.address });
  const { workers, buildId } = await createWorkers({
    connection: native,
    namespace: 'default',
    roles: queueRoles,
    activities: await buildActivities(config, queueRoles),
    concurrency: config.concurrency,
    workflowSource: defaultWorkflowSource(),
  });
  const running = workers.map((w) => w.run());
  await requireCurrent({ service: native.workflowService, namespace: 'default', buildId });
  const connection = await Connection.connect({ address: server.address });
  const client = new Client({ connection });

  const read = (i: number) => ({ name: 'fs_read', arguments: { path: `f${i}.txt` } });
  const complete = { tool_calls: [{ name: 'complete', arguments: { summary: 'ok' } }] };

  /** The job's history, whole, once it completed. */
  async function events(id: string, script: ReplayScript, approve = false): Promise<temporal.api.history.v1.IHistoryEvent[]> {
    replay.setScript(script);
    const handle = await client.workflow.start(AGENT_JOB_WORKFLOW, {
      taskQueue: TaskQueues.agent,
      workflowId: id,
      args: [{ schemaVersion: 1, goal: 'measure' }],
    });
    if (approve) {
      // Visibility, not queries, tells when it parked: a query that meets a workflow task in flight can add one.
      const parked = `WorkflowId = "${id}" AND ${AirlockSearchAttributes.status.name} = "awaiting_approval"`;
      for (let seen = false; !seen; ) {
        for await (const _ of client.workflow.list({ query: parked })) seen = true;
        if (!seen) await new Promise((r) => setTimeout(r, 100));
      }
      // Settled: a job that has upserted its status waits on its timer.
      await new Promise((r) => setTimeout(r, 500));
      for (;;) {
        const state = await handle.query(stateQuery);
        const request = state.pending[0];
        if (request !== undefined) {
          await handle.executeUpdate(decideUpdate, {
            args: [{ requestId: request.requestId, fingerprint: request.fingerprint, nonce: request.nonce, decision: 'approve', reviewer: 'measure' }],
          });
          break;
        }
        await new Promise((r) => setTimeout(r, 100));
      }
    }
    const result = (await handle.result()) as AgentJobResult;
    if (result.status !== 'completed') throw new Error(`${id} ended ${result.status}`);
    return (await handle.fetchHistory()).events ?? [];
  }

  const base = (await events('only-complete', { turns: [complete] })).length;
  const oneTurn = (await events('one-read-turn', { turns: [{ tool_calls: [read(0)] }, complete] })).length;
  const fiveTurns = (await events('five-read-turns', { turns: [...[0, 1, 2, 3, 4].map((i) => ({ tool_calls: [read(i)] })), complete] })).length;
  const batchOne = oneTurn;
  const batchFive = (await events('five-reads-one-batch', { turns: [{ tool_calls: [0, 1, 2, 3, 4].map(read) }, complete] })).length;
  const approvedHistory = await events('one-approved-delete', { turns: [{ tool_calls: [{ name: 'fs_delete', arguments: { path: 'f7.txt' } }] }, complete] }, true);
  const approved = approvedHistory.length;

  const rows: Array<[string, number | string]> = [
    ['job with only `complete` (baseline)', base],
    ['+ one turn with one allowed call', oneTurn - base],
    ['each further turn with one allowed call', (fiveTurns - oneTurn) / 4],
    ['each further allowed call in the same batch', (batchFive - batchOne) / 4],
    ['+ one turn with one approved call (park, decide, revalidate, execute)', approved - base],
    ['approved call minus allowed call, same turn shape', approved - oneTurn],
  ];
  process.stdout.write('history events (Temporal CLI dev server, TS SDK 1.24)\n');
  for (const [label, value] of rows) process.stdout.write(`  ${String(value).padStart(5)}  ${label}\n`);
  if (process.argv.includes('--events')) {
    process.stdout.write('\nthe job with one approved call, event by event\n');
    for (const event of approvedHistory) process.stdout.write(`  ${describeEvent(event)}\n`);
  }

  for (const w of workers) w.shutdown();
  await Promise.all(running);
  await connection.close();
  await native.close();
  await replay.close();
  await server.stop();
  rmSync(dir, { recursive: true, force: true });
}

/** `7 ACTIVITY_TASK_SCHEDULED modelTurn airlock-agent`: id, type and what it is about, for reading where a job's events go. */
function describeEvent(event: temporal.api.history.v1.IHistoryEvent): string {
  const type = temporal.api.enums.v1.EventType[event.eventType ?? 0]?.replace(/^EVENT_TYPE_/, '') ?? String(event.eventType);
  const scheduled = event.activityTaskScheduledEventAttributes;
  const marker = event.markerRecordedEventAttributes?.markerName;
  const about = scheduled != null ? `${scheduled.activityType?.name ?? ''} ${scheduled.taskQueue?.name ?? ''}` : (marker ?? '');
  return `${String(event.eventId).padStart(3)} ${type}${about !== '' ? ` ${about}` : ''}`;
}

main().catch((err: unknown) => {
  process.stderr.write(`measure-history failed: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
