import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../core/config/config';
import { digestOf } from '../../host/stores/contents/store';
import { ConversationReader } from '../../host/stores/contents/conversations';
import { describeOperatorError } from '../../host/operator-errors';
import { Database, DatabaseUnavailable } from '../../host/stores/database/postgres';
import { migrate } from '../../host/stores/database/migrations';
import { PostgresContentStore } from '../../host/stores/contents/postgres';
import { freePort } from '../helpers/ports';
import { buildActivities } from '../../workers/deps';
import { JobHarness } from '../helpers/job-harness';
import { startPrivatePostgres, type PrivatePostgres } from '../helpers/private-postgres';

let pg: PrivatePostgres;
const opened: Database[] = [];
const migrated = new Set<string>();

/** A worker's store on a database `airlock setup` has migrated (the first open of a database migrates it). */
async function open(database = 'postgres'): Promise<PostgresContentStore> {
  const db = Database.open(pg.url(database), { connectTimeoutMs: 5000 });
  opened.push(db);
  if (!migrated.has(database)) {
    await migrate(db);
    migrated.add(database);
  }
  return PostgresContentStore.on(db);
}

/** Runs SQL on the private server directly, as an operator would with psql. */
const sql = <R extends Record<string, unknown>>(text: string, values: unknown[] = [], database = 'postgres') => pg.sql<R>(text, values, database);

/** What a store's first use meets on a database that cannot be used. */
async function openError(url: string): Promise<DatabaseUnavailable> {
  const err: unknown = await (async () => {
    const db = Database.open(url, { connectTimeoutMs: 5000 });
    opened.push(db);
    await PostgresContentStore.on(db).get(digestOf('x'));
  })().then(
    () => new Error('expected the store to fail'),
    (e: unknown) => e,
  );
  if (!(err instanceof DatabaseUnavailable)) throw err;
  return err;
}

beforeAll(async () => {
  pg = await startPrivatePostgres();
}, 120_000);

afterAll(async () => {
  for (const db of opened) await db.close();
  await pg?.stop();
});

test('the schema migration creates airlock_contents as stores of earlier builds created it', async () => {
  await sql('CREATE DATABASE fresh');
  expect(await sql("SELECT to_regclass('airlock_contents') AS t", [], 'fresh')).toEqual([{ t: null }]);
  await open('fresh');
  const columns = await sql<{ column_name: string; data_type: string; is_nullable: string }>(
    "SELECT column_name, data_type, is_nullable FROM information_schema.columns WHERE table_name = 'airlock_contents' ORDER BY ordinal_position",
    [],
    'fresh',
  );
  expect(columns).toEqual([
    { column_name: 'digest', data_type: 'text', is_nullable: 'NO' },
    { column_name: 'text', data_type: 'text', is_nullable: 'NO' },
    { column_name: 'stored_at', data_type: 'timestamp with time zone', is_nullable: 'NO' },
  ]);
});

test('several workers migrating one empty database at once all get a working store', async () => {
  await sql('CREATE DATABASE together');
  const stores = await Promise.all(
    Array.from({ length: 4 }, async () => {
      const db = Database.open(pg.url('together'));
      opened.push(db);
      await migrate(db);
      return PostgresContentStore.on(db);
    }),
  );
  const digest = await stores[0]!.put('shared');
  for (const store of stores) expect(await store.get(digest)).toBe('shared');
});

test('put returns the sha256 of the text and get returns the text, large and unicode included', async () => {
  const store = await open();
  const unicode = 'naïve café — 日本語のテキスト, emoji 🚀👩‍💻, RTL עברית, combining e\u0301, JSON {"a":"\\u0000"}';
  const large = `${'0123456789abcdef'.repeat(65_536)}${unicode}`;
  expect(large.length).toBeGreaterThan(1024 * 1024);
  for (const text of [unicode, large, '']) {
    const digest = await store.put(text);
    expect(digest).toBe(digestOf(text));
    expect(digest).toMatch(/^[0-9a-f]{64}$/);
    expect(await store.get(digest)).toBe(text);
  }
});

test('storing the same text again is a no-op: one row, the first stored_at kept', async () => {
  const store = await open();
  const text = `idempotent ${Date.now()}`;
  const digest = await store.put(text);
  const [first] = await sql<{ stored_at: Date }>('SELECT stored_at FROM airlock_contents WHERE digest = $1', [digest]);
  await new Promise((r) => setTimeout(r, 20));
  expect(await store.put(text)).toBe(digest);
  expect(await sql('SELECT text, stored_at FROM airlock_contents WHERE digest = $1', [digest])).toEqual([{ text, stored_at: first?.stored_at }]);
});

test('an unknown digest reads as undefined', async () => {
  const store = await open();
  expect(await store.get(digestOf('never stored'))).toBeUndefined();
  expect(await store.get('not even a digest')).toBeUndefined();
});

test("two agent workers' stores see each other's writes", async () => {
  const [a, b] = [await open(), await open()];
  const fromA = await a.put('written by worker A');
  const fromB = await b.put('written by worker B');
  expect(await b.get(fromA)).toBe('written by worker A');
  expect(await a.get(fromB)).toBe('written by worker B');
  // A conversation one worker stored is read whole by the other.
  const head = await new ConversationReader(a).store({ v: 1, prev: null, messages: [{ role: 'user', content: 'hello from A' }] });
  expect(await new ConversationReader(b).read(head)).toEqual([{ role: 'user', content: 'hello from A' }]);
});

test('an unreachable server fails with an error that names AIRLOCK_DATABASE_URL and hides the password', async () => {
  const port = await freePort();
  const err = await openError(`postgres://airlock:s3cret-Passw0rd@127.0.0.1:${port}/airlock`);
  expect(err.setting).toBe('AIRLOCK_DATABASE_URL');
  expect(err.target).toBe(`postgres://airlock:***@127.0.0.1:${port}/airlock`);
  expect(err.message).toMatch(/ECONNREFUSED/);
  expect(err.message).toMatch(/check AIRLOCK_DATABASE_URL/);
  expect(err.message).not.toContain('s3cret-Passw0rd');
});

test('a database that does not exist fails with the same clear error', async () => {
  const err = await openError(`postgres://airlock:s3cret-Passw0rd@127.0.0.1:${pg.port}/no_such_db`);
  expect(err.message).toMatch(/database "no_such_db" does not exist; check AIRLOCK_DATABASE_URL/);
  expect(err.message).not.toContain('s3cret-Passw0rd');
});

test('a URL the driver cannot use fails with the same clear error', async () => {
  const err = await openError('postgres://airlock:s3cret-Passw0rd@127.0.0.1:notaport/airlock');
  expect(err.message).toMatch(/not a usable PostgreSQL URL.*check AIRLOCK_DATABASE_URL/);
  expect(err.message).not.toContain('s3cret-Passw0rd');
});

describe('an agent worker configured with AIRLOCK_CONTENT_DB', () => {
  let dataDir: string;
  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'airlock-pg-worker-'));
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  const config = (url: string) => parseConfig({ AIRLOCK_DATA_DIR: dataDir, OPENAI_BASE_URL: 'http://127.0.0.1:9/v1', AIRLOCK_CONTENT_DB: url });

  test('refuses to start on a database `airlock setup` has not prepared, saying what to run', async () => {
    await sql('CREATE DATABASE unprepared');
    const err: unknown = await buildActivities(config(pg.url('unprepared')), ['agent']).then(
      () => new Error('expected start-up to fail'),
      (e: unknown) => e,
    );
    const line = describeOperatorError(err);
    expect(line).toMatch(/^the database postgres:\/\/airlock@127\.0\.0\.1:[0-9]+\/unprepared has schema version 0; this build of airlock needs version [0-9]+: run `airlock setup` with AIRLOCK_CONTENT_DB set to migrate it$/);
  });

  test('keeps conversations in PostgreSQL once set up, not in the data folder', async () => {
    await sql('CREATE DATABASE worker');
    const db = Database.open(pg.url('worker'));
    await migrate(db);
    await db.close();
    const activities = await buildActivities(config(pg.url('worker')), ['agent']);
    expect(activities.agent).toBeDefined();
    expect(await sql("SELECT to_regclass('airlock_contents') IS NOT NULL AS t", [], 'worker')).toEqual([{ t: true }]);
    expect(existsSync(join(dataDir, 'agent', 'contents.sqlite'))).toBe(false);
  });

  test('stops at start-up with one line saying what to fix when the server is unreachable', async () => {
    const url = `postgresql://airlock:s3cret-Passw0rd@127.0.0.1:${await freePort()}/airlock`;
    const err: unknown = await buildActivities(config(url), ['agent']).then(
      () => new Error('expected start-up to fail'),
      (e: unknown) => e,
    );
    expect(err).toBeInstanceOf(DatabaseUnavailable);
    const line = describeOperatorError(err);
    expect(line.split('\n')).toHaveLength(1);
    expect(line).toMatch(/^database postgresql:\/\/airlock:\*\*\*@127\.0\.0\.1:[0-9]+\/airlock: .*check AIRLOCK_CONTENT_DB/);
    expect(line).not.toContain('s3cret-Passw0rd');
  });
});

describe('a real job with the PostgreSQL store', () => {
  let h: JobHarness;
  let contents: PostgresContentStore;
  beforeAll(async () => {
    await sql('CREATE DATABASE jobs');
    contents = await open('jobs');
    h = await JobHarness.create({ contents });
  }, 120_000);
  afterAll(async () => h?.close());

  test('a multi-turn job completes and its whole conversation is in airlock_contents', async () => {
    const marker = `pg-marker-${Date.now()}`;
    writeFileSync(join(h.root, 'notes.txt'), `${marker} ünïcödé ✓`);
    const { jobId, handle } = await h.start({
      script: {
        turns: [
          { tool_calls: [{ name: 'fs_list', arguments: { path: '.' } }] },
          { tool_calls: [{ name: 'fs_read', arguments: { path: 'notes.txt' } }] },
          { tool_calls: [{ name: 'complete', arguments: { summary: 'read the notes' } }] },
        ],
      },
    });
    expect(await h.result(jobId)).toMatchObject({ status: 'completed', turns: 3, summary: 'read the notes' });
    // Later turns were given what earlier turns stored: the model saw the file it read.
    expect([...h.toolResults(jobId).values()].some((t) => t.includes(`${marker} ünïcödé ✓`))).toBe(true);

    // The last model turn's head, as the job's history carries it.
    const events = (await handle.fetchHistory()).events ?? [];
    const modelTurns = new Set(events.filter((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === 'modelTurn').map((e) => String(e.eventId)));
    const results = events.flatMap((e) => {
      const done = e.activityTaskCompletedEventAttributes;
      const data = done?.result?.payloads?.[0]?.data;
      return done != null && modelTurns.has(String(done.scheduledEventId)) && data != null ? [JSON.parse(Buffer.from(data).toString('utf8')) as { head: string }] : [];
    });
    expect(results).toHaveLength(3);
    const head = results[2]!.head;

    // One segment per turn in PostgreSQL; another worker's store reads the conversation back whole.
    const rows = await sql<{ digest: string }>('SELECT digest FROM airlock_contents WHERE digest = ANY($1)', [results.map((r) => r.head)], 'jobs');
    expect(rows).toHaveLength(3);
    // Each is recorded as this job's, for retention.
    expect(await sql('SELECT DISTINCT job_id FROM airlock_content_refs WHERE digest = ANY($1)', [results.map((r) => r.head)], 'jobs')).toEqual([{ job_id: jobId }]);
    const other = await open('jobs');
    const conversation = await new ConversationReader(other).read(head);
    expect(conversation[0]).toMatchObject({ role: 'system' });
    expect(conversation.filter((m) => m.role === 'tool').map((m) => m.content).join('\n')).toContain(marker);
    expect(conversation[conversation.length - 1]).toMatchObject({ role: 'assistant', toolCalls: [{ name: 'complete' }] });
    // Nothing went to the default SQLite file.
    expect(existsSync(join(h.dir, 'agent', 'contents.sqlite'))).toBe(false);
  });
});
