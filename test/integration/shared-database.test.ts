import { existsSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Texts } from '../../core/job/texts';
import type { AuditEvent } from '../../core/audit/events';
import { JsonlAuditSink } from '../../host/stores/audit-log/jsonl';
import { Database } from '../../host/stores/database/postgres';
import { SCHEMA_VERSION } from '../../host/stores/database/migrations';
import { PostgresAuditLog } from '../../host/stores/audit-log/postgres';
import { JobHarness } from '../helpers/job-harness';
import { startPrivatePostgres, type PrivatePostgres } from '../helpers/private-postgres';

/**
 * Shared state on PostgreSQL with real processes: `airlock setup` migrates
 * the database (twice, and from two processes at once), tools workers
 * refuse a schema they do not know, and several tools workers on separate
 * data folders (as on separate machines) share one nonce store: a worker
 * killed after consuming a nonce is settled by another, exactly once.
 */
let pg: PrivatePostgres;
let h: JobHarness;

const sql = <R extends Record<string, unknown>>(text: string, database: string) => pg.sql<R>(text, [], database);

/** A database of its own, with a password in its URL that nothing may print. */
async function freshDatabase(name: string): Promise<string> {
  await sql(`CREATE DATABASE ${name}`, 'postgres');
  return pg.url(name).replace('postgres://airlock@', 'postgres://airlock:Sup3r-secret-pw@');
}

beforeAll(async () => {
  pg = await startPrivatePostgres();
  h = await JobHarness.create({
    toolsInProcess: false,
    rules: {
      version: 1,
      rules: [{ id: 'approve-writes', version: 1, name: 'Writes need approval', scope: { tools: ['fs_write'] }, action: 'request_approval' }],
    },
  });
}, 120_000);
afterAll(async () => {
  await h?.close();
  await pg?.stop();
});

describe('airlock setup', () => {
  test('migrates the database to this build’s schema, then finds nothing to do', async () => {
    const url = await freshDatabase('setup_once');
    const first = await h.cli(['setup'], { AIRLOCK_DATABASE_URL: url });
    expect(first).toMatchObject({ code: 0 });
    expect(first.stdout).toMatch(new RegExp(`database postgres://airlock:\\*\\*\\*@127\\.0\\.0\\.1:[0-9]+/setup_once: schema version 0 -> ${SCHEMA_VERSION} \\(1: `));
    const again = await h.cli(['setup', '--json'], { AIRLOCK_DATABASE_URL: url });
    expect(JSON.parse(again.stdout)).toMatchObject({ database: { from: SCHEMA_VERSION, to: SCHEMA_VERSION, applied: [] } });
    for (const out of [first, again]) expect(`${out.stdout}${out.stderr}`).not.toContain('Sup3r-secret-pw');
    expect(await sql('SELECT version FROM airlock_schema_migrations ORDER BY version', 'setup_once')).toEqual(
      Array.from({ length: SCHEMA_VERSION }, (_, i) => ({ version: i + 1 })),
    );
  });

  test('run from several machines at once, each succeeds and every migration is applied once', async () => {
    const url = await freshDatabase('setup_together');
    const runs = await Promise.all(Array.from({ length: 3 }, () => h.cli(['setup', '--json'], { AIRLOCK_DATABASE_URL: url })));
    expect(runs.map((r) => r.code)).toEqual([0, 0, 0]);
    expect(runs.map((r) => (JSON.parse(r.stdout) as { database: { applied: unknown[] } }).database.applied.length).sort()).toEqual([0, 0, SCHEMA_VERSION]);
    expect(await sql('SELECT count(*)::int AS n FROM airlock_schema_migrations', 'setup_together')).toEqual([{ n: SCHEMA_VERSION }]);
  });
});

describe('a tools worker', () => {
  test('refuses a database `airlock setup` has not prepared, in one line naming the versions and the command', async () => {
    const url = await freshDatabase('unprepared');
    const worker = h.spawnToolsWorker({ AIRLOCK_DATABASE_URL: url, AIRLOCK_DATA_DIR: mkdtempSync(join(h.dir, 'tools-')) });
    expect(await worker.exited()).toBe(1);
    const lines = worker.output().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      new RegExp(`has schema version 0; this build of airlock needs version ${SCHEMA_VERSION}: run \`airlock setup\` with AIRLOCK_DATABASE_URL set to migrate it$`),
    );
    expect(lines[0]).toContain('postgres://airlock:***@127.0.0.1:');
    expect(lines[0]).not.toContain('Sup3r-secret-pw');
  });

  test('refuses a database newer than it knows, saying to upgrade', async () => {
    const url = await freshDatabase('from_the_future');
    expect((await h.cli(['setup'], { AIRLOCK_DATABASE_URL: url })).code).toBe(0);
    await sql(`INSERT INTO airlock_schema_migrations (version, name) VALUES (${SCHEMA_VERSION + 1}, 'a later build')`, 'from_the_future');
    const worker = h.spawnToolsWorker({ AIRLOCK_DATABASE_URL: url, AIRLOCK_DATA_DIR: mkdtempSync(join(h.dir, 'tools-')) });
    expect(await worker.exited()).toBe(1);
    expect(worker.output().trim()).toMatch(new RegExp(`has schema version ${SCHEMA_VERSION + 1}, newer than this build of airlock knows \\(${SCHEMA_VERSION}\\): upgrade airlock on this machine$`));
  });
});

describe('a call no tools worker takes', () => {
  test('says so in `show` (text and JSON) while it waits, and runs once a tools worker starts', async () => {
    const url = await freshDatabase('no_worker');
    expect((await h.cli(['setup'], { AIRLOCK_DATABASE_URL: url })).code).toBe(0);
    writeFileSync(join(h.root, 'later.log'), 'line 1\n');
    const { jobId } = await h.start({
      jobId: 'no-tools-worker',
      script: {
        turns: [
          { tool_calls: [{ name: 'fs_write', arguments: { path: 'later.log', content: 'line 2\n', mode: 'append' } }] },
          { tool_calls: [{ name: 'complete', arguments: { summary: 'appended' } }] },
        ],
      },
    });
    // Parking needs a tools worker too (it observes the target for the reviewer): until one runs, that waits.
    let shown = await h.cli(['show', jobId]);
    for (let i = 0; i < 50 && !shown.stdout.includes('waiting for a tools worker'); i++) {
      await new Promise((r) => setTimeout(r, 200));
      shown = await h.cli(['show', jobId]);
    }
    expect(shown.stdout).toMatch(/^ {2}waiting for a tools worker to take prepareApproval since \d{4}-\d\d-\d\dT/m);
    const json = JSON.parse((await h.cli(['show', jobId, '--json'])).stdout) as { inProgress: unknown[] };
    expect(json.inProgress).toEqual([
      { activity: 'prepareApproval', queue: 'tools', machine: null, attempt: 1, state: 'waiting', since: expect.any(String), lastFailure: null },
    ]);
    const worker = h.spawnToolsWorker({ AIRLOCK_DATABASE_URL: url, AIRLOCK_DATA_DIR: mkdtempSync(join(h.dir, 'late-')) });
    await h.waitForPending(jobId);
    expect((await h.cli(['show', jobId])).stdout).not.toContain('waiting for a tools worker');
    expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: true });
    expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
    expect(readFileSync(join(h.root, 'later.log'), 'utf8')).toBe('line 1\nline 2\n');
    worker.child.kill('SIGTERM');
    await worker.exited();
  });
});

describe('tools workers on separate data folders sharing one database', () => {
  let url: string;
  beforeAll(async () => {
    url = await freshDatabase('shared_nonces');
    expect((await h.cli(['setup'], { AIRLOCK_DATABASE_URL: url })).code).toBe(0);
  });

  test('one killed after consuming the nonce is settled by another, on its own folder: the effect happens once', async () => {
    const file = join(h.root, 'shared.log');
    writeFileSync(file, 'line 1\n');
    const [dataA, dataB] = [mkdtempSync(join(h.dir, 'machine-a-')), mkdtempSync(join(h.dir, 'machine-b-'))];
    const a = h.spawnToolsWorker({ AIRLOCK_DATABASE_URL: url, AIRLOCK_DATA_DIR: dataA, AIRLOCK_TEST_CRASH_AT: 'after-consume' });
    await a.waitFor(/workers polling airlock-tools/);
    const { jobId } = await h.start({
      jobId: 'shared-consumed',
      script: {
        turns: [
          { tool_calls: [{ name: 'fs_write', arguments: { path: 'shared.log', content: 'line 2\n', mode: 'append' } }] },
          { tool_calls: [{ name: 'complete', arguments: { summary: 'appended' } }] },
        ],
      },
    });
    await h.waitForPending(jobId);
    expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: true });
    await a.waitFor(/execute paused after-consume/);
    // The nonce is consumed in the database, by worker A.
    expect(await sql('SELECT job_id, outcome FROM airlock_nonces', 'shared_nonces')).toEqual([{ job_id: jobId, outcome: null }]);
    a.child.kill('SIGKILL');
    await a.exited();

    const b = h.spawnToolsWorker({ AIRLOCK_DATABASE_URL: url, AIRLOCK_DATA_DIR: dataB });
    await b.waitFor(/workers polling airlock-tools/);
    expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
    expect(readFileSync(file, 'utf8')).toBe('line 1\nline 2\n');
    expect(h.toolResults(jobId).get('call_0_0')).toBe(`wrote 7 bytes to ${file} (append)\n${Texts.reconciledRanNow}`);
    const rows = await sql<{ outcome: string }>('SELECT outcome FROM airlock_nonces', 'shared_nonces');
    expect(rows).toHaveLength(1);
    expect(JSON.parse(rows[0]!.outcome)).toMatchObject({ ok: true, reconciled: 'ran_now' });
    // Neither machine kept a nonce store of its own.
    for (const data of [dataA, dataB]) expect(existsSync(join(data, 'tools', 'nonces.sqlite'))).toBe(false);
    b.child.kill('SIGTERM');
    await b.exited();
  });
});

describe('airlock audit', () => {
  test('prints the same from the shared database as from a JSONL log holding the same events, with every filter', async () => {
    const url = await freshDatabase('audit_parity');
    expect((await h.cli(['setup'], { AIRLOCK_DATABASE_URL: url })).code).toBe(0);
    const data = mkdtempSync(join(h.dir, 'audit-data-'));
    const batches: AuditEvent[][] = [1, 2, 3].map((n) =>
      Array.from({ length: n + 1 }, (_, i): AuditEvent => ({
        type: 'runtime_error',
        jobId: `job-${n % 2}`,
        runId: `run-${n}-0000`,
        at: `2026-12-01T10:0${n}:0${i}.000Z`,
        policyVersion: 'p1',
        data: i === 0 ? { code: 'model_error', error: `täst ${n} token=abc123secret` } : { code: 'facts_unavailable', error: `line ${i}` },
      })),
    );
    const file = new JsonlAuditSink(join(data, 'audit', 'audit.jsonl'));
    const db = Database.open(url);
    const table = new PostgresAuditLog(db);
    for (const batch of batches) {
      await file.write(batch);
      await table.write(batch);
    }
    await db.close();
    for (const args of [[], ['--job', 'job-1'], ['--job', 'job-1', '--run', 'run-3'], ['--type', 'runtime_error', '--limit', '2'], ['--json']]) {
      const fromFile = await h.cli(['audit', ...args], { AIRLOCK_DATA_DIR: data });
      const fromDb = await h.cli(['audit', ...args], { AIRLOCK_DATA_DIR: data, AIRLOCK_DATABASE_URL: url });
      expect({ args, code: fromDb.code, stdout: fromDb.stdout, stderr: fromDb.stderr }).toEqual({ args, code: 0, stdout: fromFile.stdout, stderr: fromFile.stderr });
      expect(fromDb.stdout.length).toBeGreaterThan(10);
    }
    const none = await h.cli(['audit', '--job', 'nobody'], { AIRLOCK_DATA_DIR: data, AIRLOCK_DATABASE_URL: url });
    expect(none.stdout.trim()).toMatch(/^no audit events for job nobody in postgres:\/\/airlock:\*\*\*@127\.0\.0\.1:[0-9]+\/audit_parity \(table airlock_audit\)$/);
  });
});

describe('a database outage', () => {
  test('PostgreSQL stopped while an approved call starts and back seconds later: the workers ride it out, and the call runs once', async () => {
    const url = await freshDatabase('outage');
    expect((await h.cli(['setup'], { AIRLOCK_DATABASE_URL: url })).code).toBe(0);
    const file = join(h.root, 'outage.log');
    writeFileSync(file, 'line 1\n');
    const worker = h.spawnToolsWorker({ AIRLOCK_DATABASE_URL: url, AIRLOCK_DATA_DIR: mkdtempSync(join(h.dir, 'outage-')) });
    await worker.waitFor(/workers polling airlock-tools/);
    const { jobId } = await h.start({
      jobId: 'outage',
      script: {
        turns: [
          { tool_calls: [{ name: 'fs_write', arguments: { path: 'outage.log', content: 'line 2\n', mode: 'append' } }] },
          { tool_calls: [{ name: 'complete', arguments: { summary: 'appended' } }] },
        ],
      },
    });
    await h.waitForPending(jobId);
    await pg.halt();
    try {
      expect(await h.airlock.decide(jobId, { decision: 'approve', reviewer: 'alice' })).toMatchObject({ accepted: true });
      // The call is on its way to the tools worker, which cannot reach the database.
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      expect(readFileSync(file, 'utf8')).toBe('line 1\n');
    } finally {
      await pg.resume();
    }
    expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
    expect(readFileSync(file, 'utf8')).toBe('line 1\nline 2\n');
    const rows = await sql<{ outcome: string }>('SELECT outcome FROM airlock_nonces', 'outage');
    expect(rows).toHaveLength(1);
    expect(JSON.parse(rows[0]!.outcome)).toMatchObject({ ok: true });
    // Ridden out within the attempt: the call's one `execute` ran as its first attempt, nothing failed and was retried.
    const events = (await h.env.client.workflow.getHandle(jobId).fetchHistory()).events ?? [];
    const executes = new Set(events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'execute').map((e) => String(e.eventId)));
    expect(executes.size).toBe(1);
    const started = events.filter((e) => executes.has(String(e.activityTaskStartedEventAttributes?.scheduledEventId)));
    expect(started.map((e) => e.activityTaskStartedEventAttributes?.attempt)).toEqual([1]);
    // The worker stayed up through it.
    expect(worker.child.exitCode).toBeNull();
    worker.child.kill('SIGTERM');
    await worker.exited();
  });
});
