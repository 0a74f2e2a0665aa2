import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type AuditSink } from '../../host/stores/audit-log/store';
import { JsonlAuditSink } from '../../host/stores/audit-log/jsonl';
import { JsonlAuditReader, type AuditReader } from '../../host/stores/audit-log/reader';
import { type ContentStore } from '../../host/stores/contents/store';
import { SqliteContentStore } from '../../host/stores/contents/sqlite';
import type { AuditEvent } from '../../core/audit/events';
import { PostgresAuditLog } from '../../host/stores/audit-log/postgres';
import { type NotificationOutbox } from '../../host/stores/outbox/store';
import { SqliteNotificationOutbox } from '../../host/stores/outbox/sqlite';
import { PostgresNotificationOutbox } from '../../host/stores/outbox/postgres';
import { InviteError, MemoryChallenges, tokenHash, type ChallengeStore, type InviteStore } from '../../host/stores/passkey-invites/store';
import { PasskeyInvites } from '../../host/stores/passkey-invites/files';
import { SqlitePasskeyCounters } from '../../host/stores/passkey-counters/sqlite';
import type { PasskeyCounters } from '../../host/stores/passkey-counters/store';
import { PostgresPasskeyCounters } from '../../host/stores/passkey-counters/postgres';
import { SqliteStandingApprovals } from '../../host/stores/standing-approvals/sqlite';
import { PostgresStandingApprovals } from '../../host/stores/standing-approvals/postgres';
import type { StandingApprovals } from '../../host/stores/standing-approvals/store';
import type { StandingRecord } from '../../core/approval/standing';
import { PostgresChallenges, PostgresPasskeyInvites } from '../../host/stores/passkey-invites/postgres';
import { AgentTokenError, type AgentTokens } from '../../host/stores/agent-tokens/store';
import { SqliteAgentTokens } from '../../host/stores/agent-tokens/sqlite';
import { PostgresAgentTokens } from '../../host/stores/agent-tokens/postgres';
import { noticeFor } from '../../core/reviewer/notification';
import { type Notice } from '../../core/reviewer/notice';
import { Database } from '../../host/stores/database/postgres';
import { migrate } from '../../host/stores/database/migrations';
import { NonceStoreUnusable, pathDigest, storedOutcome, type NonceStore } from '../../host/stores/nonces/store';
import { PostgresNonceStore } from '../../host/stores/nonces/postgres';
import { SqliteNonceStore } from '../../host/stores/nonces/sqlite';
import type { UndoRecord } from '../../host/stores/nonces/undo-records';
import { parseConfig } from '../../core/config/config';
import { statePaths } from '../../host/config/paths';
import { retentionTasks } from '../../workers/deps';
import { PostgresContentStore } from '../../host/stores/contents/postgres';
import { startPrivatePostgres, type PrivatePostgres } from '../helpers/private-postgres';

/**
 * The stores' contract, run against both backends: the embedded SQLite
 * files and the shared PostgreSQL database. Two instances of a store over
 * the same backing stand for two workers (two processes, or two machines).
 */
interface Backend {
  readonly name: string;
  nonceStores(): Promise<[NonceStore, NonceStore]>;
  /** Nonce stores as two workers see them, everything stored (to look for a path in), and a close for the end of the test (their connections are not kept to the end of the file). */
  undoStores(): Promise<{ stores: [NonceStore, NonceStore]; stored(): Promise<string>; close(): Promise<void> }>;
  contentStores(): Promise<[ContentStore, ContentStore]>;
  /** An audit log: two writers (two agent workers) and its reader. */
  auditLog(): Promise<{ writers: [AuditSink, AuditSink]; reader: AuditReader }>;
  /** A fresh notification outbox as two agent workers see it. */
  outboxes(): Promise<[NotificationOutbox, NotificationOutbox]>;
  /** Passkey invites as two processes see them (the CLI and an approval page, or two pages), and a way to age one past its expiry. */
  invites(): Promise<{ stores: [InviteStore, InviteStore]; expire(token: string): Promise<void> }>;
  /** Passkey signature counters as two agent workers see them. */
  passkeyCounters(): Promise<[PasskeyCounters, PasskeyCounters]>;
  /** The approval page's challenges as two page processes see them (the embedded one lives in one process's memory: the same store twice). */
  challenges(): Promise<[ChallengeStore, ChallengeStore]>;
  /** Standing approvals as two agent workers see them. */
  standing(): Promise<[StandingApprovals, StandingApprovals]>;
  /** MCP agents' bearer tokens as two processes see them (`airlock agent` and `airlock mcp --listen`), and everything stored, to look for a token in. */
  agentTokens(): Promise<{ stores: [AgentTokens, AgentTokens]; stored(): Promise<string> }>;
}

let pg: PrivatePostgres;
let tokenStores: Promise<{ stores: [AgentTokens, AgentTokens]; stored(): Promise<string> }> | undefined;
let dir: string;
const closers: Array<() => Promise<void>> = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-stores-'));
  pg = await startPrivatePostgres();
  const db = Database.open(pg.url());
  await migrate(db);
  await db.close();
}, 120_000);

afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
  await pg?.stop();
  rmSync(dir, { recursive: true, force: true });
});

function kept<T extends { close(): Promise<void> }>(store: T): T {
  closers.push(() => store.close());
  return store;
}

/** A pool of its own per store, as each worker process has. */
function database(): Database {
  const db = Database.open(pg.url(), { maxConnections: 8 });
  closers.push(() => db.close());
  return db;
}

/** A database of its own, migrated, so what one test wrote is not read by another. */
async function freshDatabase(prefix: string): Promise<string> {
  const name = `${prefix}_${randomBytes(4).toString('hex')}`;
  // Closed at once: the server's connections are shared by every store of this file, and a pool's idle ones last 30 s.
  const server = Database.open(pg.url(), { maxConnections: 1 });
  try {
    await server.query(`CREATE DATABASE ${name}`);
  } finally {
    await server.close();
  }
  const url = pg.url(name);
  const setup = Database.open(url);
  await migrate(setup);
  await setup.close();
  return url;
}

const backends: Backend[] = [
  {
    name: 'sqlite',
    async nonceStores() {
      const file = join(mkdtempSync(join(dir, 'n-')), 'nonces.sqlite');
      return [kept(new SqliteNonceStore(file)), kept(new SqliteNonceStore(file))];
    },
    async undoStores() {
      const file = join(mkdtempSync(join(dir, 'u-')), 'nonces.sqlite');
      const stores: [NonceStore, NonceStore] = [new SqliteNonceStore(file), new SqliteNonceStore(file)];
      return {
        stores,
        // The file and its write-ahead log: wherever SQLite put the rows.
        stored: async () => ['', '-wal'].map((s) => readIfThere(`${file}${s}`)).join(''),
        close: async () => {
          for (const store of stores) await store.close();
        },
      };
    },
    async contentStores() {
      const file = join(mkdtempSync(join(dir, 'c-')), 'contents.sqlite');
      return [kept(new SqliteContentStore(file)), kept(new SqliteContentStore(file))];
    },
    async auditLog() {
      const file = join(mkdtempSync(join(dir, 'a-')), 'audit.jsonl');
      return { writers: [new JsonlAuditSink(file), new JsonlAuditSink(file)], reader: new JsonlAuditReader(file) };
    },
    async outboxes() {
      const file = join(mkdtempSync(join(dir, 'o-')), 'notifications.sqlite');
      return [kept(new SqliteNotificationOutbox(file)), kept(new SqliteNotificationOutbox(file))];
    },
    async invites() {
      const folder = mkdtempSync(join(dir, 'i-'));
      return {
        stores: [new PasskeyInvites(folder), new PasskeyInvites(folder)],
        async expire(token) {
          const file = join(folder, `${tokenHash(token)}.json`);
          writeFileSync(file, JSON.stringify({ ...(JSON.parse(readFileSync(file, 'utf8')) as object), expiresAt: 0 }));
        },
      };
    },
    async passkeyCounters() {
      const file = join(mkdtempSync(join(dir, 'p-')), 'passkey-counters.sqlite');
      return [kept(new SqlitePasskeyCounters(file)), kept(new SqlitePasskeyCounters(file))];
    },
    async standing() {
      const file = join(mkdtempSync(join(dir, 's-')), 'standing-approvals.sqlite');
      return [kept(new SqliteStandingApprovals(file)), kept(new SqliteStandingApprovals(file))];
    },
    async challenges() {
      const one = new MemoryChallenges();
      return [one, one];
    },
    async agentTokens() {
      const file = join(mkdtempSync(join(dir, 't-')), 'agent-tokens.sqlite');
      const a = kept(new SqliteAgentTokens(file));
      const b = kept(new SqliteAgentTokens(file));
      // The file and its write-ahead log: wherever SQLite put the rows.
      return { stores: [a, b], stored: async () => ['', '-wal'].map((s) => readIfThere(`${file}${s}`)).join('') };
    },
  },
  {
    name: 'postgres',
    async nonceStores() {
      const url = await freshDatabase('nonces');
      const own = () => {
        const db = Database.open(url, { maxConnections: 8 });
        closers.push(() => db.close());
        return db;
      };
      return [kept(await PostgresNonceStore.open(own())), kept(await PostgresNonceStore.open(own()))];
    },
    async undoStores() {
      const url = await freshDatabase('undo');
      // A pool of its own per store, as each worker has.
      const one = Database.open(url, { maxConnections: 8 });
      const two = Database.open(url, { maxConnections: 8 });
      const admin = Database.open(url, { maxConnections: 1 });
      return {
        stores: [await PostgresNonceStore.open(one), await PostgresNonceStore.open(two)],
        stored: async () => JSON.stringify((await admin.query('SELECT * FROM airlock_undo')).rows),
        close: async () => {
          for (const db of [one, two, admin]) await db.close();
        },
      };
    },
    async contentStores() {
      return [PostgresContentStore.on(database()), PostgresContentStore.on(database())];
    },
    async auditLog() {
      const url = await freshDatabase('audit');
      const own = () => {
        const db = Database.open(url);
        closers.push(() => db.close());
        return new PostgresAuditLog(db);
      };
      return { writers: [own(), own()], reader: own() };
    },
    async outboxes() {
      const url = await freshDatabase('outbox');
      const own = () => {
        const db = Database.open(url);
        closers.push(() => db.close());
        return new PostgresNotificationOutbox(db);
      };
      return [own(), own()];
    },
    async invites() {
      const url = await freshDatabase('invites');
      const own = () => {
        const db = Database.open(url);
        closers.push(() => db.close());
        return db;
      };
      const admin = own();
      return {
        stores: [new PostgresPasskeyInvites(own()), new PostgresPasskeyInvites(own())],
        async expire(token) {
          await admin.query({ text: 'UPDATE airlock_invites SET expires_at = 0 WHERE token_hash = $1', values: [tokenHash(token)] });
        },
      };
    },
    async passkeyCounters() {
      const url = await freshDatabase('counters');
      const own = () => {
        const db = Database.open(url);
        closers.push(() => db.close());
        return new PostgresPasskeyCounters(db);
      };
      return [own(), own()];
    },
    async standing() {
      const url = await freshDatabase('standing');
      const own = () => {
        const db = Database.open(url, { maxConnections: 5 });
        closers.push(() => db.close());
        return new PostgresStandingApprovals(db);
      };
      return [own(), own()];
    },
    async challenges() {
      const url = await freshDatabase('challenges');
      const own = () => {
        const db = Database.open(url);
        closers.push(() => db.close());
        return new PostgresChallenges(db);
      };
      return [own(), own()];
    },
    async agentTokens() {
      // One database and one pair of stores for these tests (each uses its own agent names): the server's connections are shared with every store of this file.
      tokenStores ??= (async () => {
        const url = await freshDatabase('tokens');
        const own = () => {
          const db = Database.open(url, { maxConnections: 2 });
          closers.push(() => db.close());
          return db;
        };
        const admin = own();
        return {
          stores: [new PostgresAgentTokens(own()), new PostgresAgentTokens(own())] as [AgentTokens, AgentTokens],
          stored: async () => JSON.stringify((await admin.query('SELECT * FROM airlock_agent_tokens')).rows),
        };
      })();
      return tokenStores;
    },
  },
];

const nonce = () => randomBytes(16).toString('hex');
const readIfThere = (file: string) => {
  try {
    return readFileSync(file).toString('latin1');
  } catch {
    return '';
  }
};
const record = (n: string) => ({ nonce: n, jobId: 'job-1', callId: 'call-1', fingerprint: 'f'.repeat(64) });
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.each(backends)('$name nonce store', (backend) => {
  test('a nonce is consumed once; the second consume says when, and what was recorded before', async () => {
    const [a, b] = await backend.nonceStores();
    expect(a.id).toBe(b.id);
    const n = nonce();
    const before = [{ path: '/srv/data/token=abc.txt', exists: true as const, type: 'file' as const, size: 3, mtimeMs: 1_700_000_000_000, mode: '644', dev: 1, ino: 2, sha256: 'a'.repeat(64), entries: null }];
    expect(await a.consume({ ...record(n), before })).toEqual({ consumed: true });
    const again = await b.consume(record(n));
    expect(again).toMatchObject({ consumed: false, outcome: null });
    if (again.consumed) throw new Error('consumed twice');
    expect(Date.parse(again.consumedAt)).toBeGreaterThan(Date.now() - 60_000);
    // The path is kept only as its digest: a file name can be a secret.
    expect(again.before).toEqual([{ ...before[0], path: pathDigest('/srv/data/token=abc.txt') }]);
    expect(await a.lookup(nonce())).toBeUndefined();
  });

  test('an outcome for a nonce the store no longer holds is refused, so the attempt fails and its retry settles the call', async () => {
    const [a] = await backend.nonceStores();
    await expect(a.recordOutcome(nonce(), storedOutcome({ ok: true, output: '' }))).rejects.toBeInstanceOf(NonceStoreUnusable);
    await expect(a.recordOutcome(nonce(), storedOutcome({ ok: true, output: '' }))).rejects.toThrow(/no longer holds nonce [0-9a-f]{32}, which this attempt consumed .*; the next attempt settles the call from its target$/);
  });

  test('of many workers consuming one nonce at the same moment, exactly one wins', async () => {
    const [a, b] = await backend.nonceStores();
    for (let round = 0; round < 5; round++) {
      const n = nonce();
      const results = await Promise.all(Array.from({ length: 16 }, (_, i) => (i % 2 === 0 ? a : b).consume(record(n))));
      expect(results.filter((r) => r.consumed)).toHaveLength(1);
    }
  });

  test('the outcome is kept as size and digest, never the output, and is what every worker then reads', async () => {
    const [a, b] = await backend.nonceStores();
    const n = nonce();
    await a.consume(record(n));
    await a.recordOutcome(n, storedOutcome({ ok: true, output: 'secret output' }, 'ran_now'));
    const seen = await b.lookup(n);
    expect(seen?.outcome).toEqual({ ok: true, outputBytes: 13, outputSha256: storedOutcome({ ok: true, output: 'secret output' }).outputSha256, reconciled: 'ran_now' });
    expect(JSON.stringify(seen)).not.toContain('secret output');
  });

  test('a held nonce is claimed only once its holder is silent, by one taker, and never once it has an outcome', async () => {
    const [a, b] = await backend.nonceStores();
    const n = nonce();
    await a.consume(record(n));
    // The holder consumed it a moment ago: it is alive.
    expect(await b.claim(n, 60_000)).toBe(false);
    await sleep(1500);
    expect(await b.silentFor(n)).toBeGreaterThanOrEqual(1000);
    // Renewed by its holder: still alive.
    await a.renew(n);
    expect(await b.silentFor(n)).toBeLessThan(1000);
    expect(await b.claim(n, 1000)).toBe(false);
    await sleep(1500);
    // Silent for longer than the lease: of several takers, one wins.
    const takers = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? a : b).claim(n, 1000)));
    expect(takers.filter(Boolean)).toHaveLength(1);
    // The winner now holds it.
    expect(await a.claim(n, 1000)).toBe(false);
    await a.recordOutcome(n, storedOutcome({ ok: false, output: '' }, 'unknown'));
    expect(await b.silentFor(n)).toBeUndefined();
    await sleep(1100);
    expect(await b.claim(n, 1000)).toBe(false);
    // A nonce nobody consumed cannot be claimed.
    expect(await b.claim(nonce(), 0)).toBe(false);
  });
});

describe.each(backends)('$name nonce store retention', (backend) => {
  test('nonces consumed longer ago than the retention are forgotten, newer ones kept', async () => {
    const [a] = await backend.nonceStores();
    const [old1, old2, fresh] = [nonce(), nonce(), nonce()];
    await a.consume(record(old1));
    await a.consume(record(old2));
    await a.recordOutcome(old1, storedOutcome({ ok: true, output: '' }));
    await sleep(1500);
    await a.consume(record(fresh));
    expect(await a.prune(1000)).toBe(2);
    expect(await a.lookup(old1)).toBeUndefined();
    expect(await a.lookup(old2)).toBeUndefined();
    expect(await a.lookup(fresh)).toMatchObject({ consumed: false });
    expect(await a.prune(60_000)).toBe(0);
  });
});

/** An undo record of a file moved aside; the path it had is kept only as its digest. */
const undo = (n: string, fields: Partial<UndoRecord> = {}): UndoRecord => ({
  schemaVersion: 1,
  nonce: n,
  jobId: 'job-u',
  callId: 'call-u',
  toolName: 'fs_delete',
  root: '/srv/x',
  pathDigest: pathDigest('/srv/x/token=abc'),
  held: { type: 'file', bytes: 3, files: null, digest: 'b'.repeat(64), mode: '600' },
  heldAt: '2026-01-01T10:00:00.000Z',
  expiresAt: '2026-01-08T10:00:00.000Z',
  state: 'held',
  ...fields,
});
const nonces = (records: readonly UndoRecord[]) => records.map((r) => r.nonce);

describe.each(backends)('$name undo records', (backend) => {
  const open: Array<() => Promise<void>> = [];
  const undoStores = async () => {
    const opened = await backend.undoStores();
    open.push(opened.close);
    return opened;
  };
  afterEach(async () => {
    for (const close of open.splice(0)) await close();
  });

  test('a record is kept as it was given and every worker reads it back exactly', async () => {
    const { stores: [a, b] } = await undoStores();
    const n = nonce();
    const folder = undo(n, { held: { type: 'directory', bytes: 12_345, files: 7, digest: null, mode: '755' }, heldAt: '2026-02-03T04:05:06.789Z' });
    expect(await a.recordUndo(folder)).toBe(true);
    expect(await b.undoRecord(n)).toEqual(folder);
    expect(await a.undoRecord(n)).toEqual(folder);
    expect(await b.undoRecord(nonce())).toBeUndefined();
  });

  test('the same nonce recorded twice keeps the first record; of several at once, one is stored', async () => {
    const { stores: [a, b] } = await undoStores();
    const n = nonce();
    const first = undo(n);
    expect(await a.recordUndo(first)).toBe(true);
    expect(await b.recordUndo(undo(n, { callId: 'call-retry', heldAt: '2026-01-02T00:00:00.000Z' }))).toBe(false);
    expect(await a.recordUndo(first)).toBe(false);
    expect(await b.undoRecord(n)).toEqual(first);
    const m = nonce();
    const stored = await Promise.all(Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? a : b).recordUndo(undo(m, { callId: `call-${i}` }))));
    expect(stored.filter(Boolean)).toHaveLength(1);
    expect((await a.undoRecord(m))?.callId).toBe(`call-${stored.indexOf(true)}`);
  });

  test('a held record revised keeps its times, job and state and takes the new change; a settled one is not revised', async () => {
    const { stores: [a, b] } = await undoStores();
    const n = nonce();
    const entry = (index: number) => ({ index, from: `sha256:${'a'.repeat(63)}${index}`, to: `sha256:${'b'.repeat(63)}${index}`, held: { type: 'file' as const, bytes: 3, files: null, digest: null, mode: '644', dev: 1, ino: 100 + index } });
    const first = undo(n, { held: { type: 'set', bytes: 3, files: 1, digest: null, mode: '' }, change: { kind: 'moved_many', count: 3, list: 'l', entries: [entry(0)] }, heldAt: '2026-03-01T00:00:00.000Z' });
    expect(await a.recordUndo(first)).toBe(true);
    // A retry's revision: more entries moved; its own times, job and state are not the stored ones.
    const revised = undo(n, { jobId: 'job-forged', state: 'restored', held: { type: 'set', bytes: 9, files: 3, digest: null, mode: '' }, change: { kind: 'moved_many', count: 3, list: 'l', entries: [entry(0), entry(1), entry(2)] }, heldAt: '2026-03-09T00:00:00.000Z' });
    expect(await b.reviseUndo(revised)).toBe(true);
    expect(await a.undoRecord(n)).toEqual({ ...revised, jobId: first.jobId, state: 'held', heldAt: first.heldAt, expiresAt: first.expiresAt });
    expect(nonces(await a.undoRecords({ jobId: first.jobId, state: 'held', limit: 10 }))).toContain(n);
    expect(await a.settleUndo(n, 'restored')).toBe(true);
    expect(await b.reviseUndo(first)).toBe(false);
    expect(await a.undoRecord(n)).toMatchObject({ state: 'restored', change: { entries: [entry(0), entry(1), entry(2)] } });
    expect(await a.reviseUndo(undo(nonce()))).toBe(false);
  });

  test('records are listed by job and by state, newest first, at most as many as asked', async () => {
    const { stores: [a, b] } = await undoStores();
    const [a1, a2, a3, b1] = [nonce(), nonce(), nonce(), nonce()];
    // Recorded out of order, so the order read is the store's.
    await a.recordUndo(undo(a2, { jobId: 'job-a', heldAt: '2026-01-01T10:00:02.000Z' }));
    await b.recordUndo(undo(b1, { jobId: 'job-b', heldAt: '2026-01-01T10:00:04.000Z' }));
    await a.recordUndo(undo(a3, { jobId: 'job-a', heldAt: '2026-01-01T10:00:03.000Z' }));
    await b.recordUndo(undo(a1, { jobId: 'job-a', heldAt: '2026-01-01T10:00:01.000Z' }));
    expect(await a.settleUndo(a2, 'restored')).toBe(true);

    expect(nonces(await b.undoRecords({ jobId: 'job-a', limit: 10 }))).toEqual([a3, a2, a1]);
    expect(nonces(await b.undoRecords({ jobId: 'job-a', limit: 2 }))).toEqual([a3, a2]);
    expect(nonces(await b.undoRecords({ jobId: 'job-a', state: 'held', limit: 10 }))).toEqual([a3, a1]);
    expect(nonces(await a.undoRecords({ state: 'restored', limit: 10 }))).toEqual([a2]);
    expect(nonces(await a.undoRecords({ state: 'held', limit: 10 }))).toEqual([b1, a3, a1]);
    expect(nonces(await a.undoRecords({ limit: 10 }))).toEqual([b1, a3, a2, a1]);
    expect(nonces(await a.undoRecords({ limit: 1 }))).toEqual([b1]);
    expect(await a.undoRecords({ jobId: 'job-b', state: 'purged', limit: 10 })).toEqual([]);
    expect(await a.undoRecords({ jobId: 'job-none', limit: 10 })).toEqual([]);
  });

  test('of many undos and purges of one record at the same moment, exactly one settles it, and the record says which and when', async () => {
    const { stores: [a, b] } = await undoStores();
    for (let round = 0; round < 5; round++) {
      const n = nonce();
      const held = undo(n);
      await a.recordUndo(held);
      const tos = Array.from({ length: 16 }, (_, i): 'restored' | 'purged' => (i % 4 < 2 ? 'restored' : 'purged'));
      const results = await Promise.all(tos.map((to, i) => (i % 2 === 0 ? a : b).settleUndo(n, to)));
      expect(results.filter(Boolean)).toHaveLength(1);
      const winner = tos[results.indexOf(true)];
      const settled = await b.undoRecord(n);
      expect(settled).toEqual({ ...held, state: winner, settledAt: expect.any(String) });
      expect(Date.parse(settled?.settledAt ?? '')).toBeGreaterThan(Date.now() - 60_000);
      expect((await a.undoRecords({ jobId: held.jobId, state: winner, limit: 10 })).map((r) => r.nonce)).toContain(n);
    }
  });

  test('a settled record is not settled again, and a record nobody kept is not settled at all', async () => {
    const { stores: [a, b] } = await undoStores();
    const n = nonce();
    await a.recordUndo(undo(n));
    expect(await a.settleUndo(n, 'purged')).toBe(true);
    const purged = await b.undoRecord(n);
    expect(await b.settleUndo(n, 'restored')).toBe(false);
    expect(await a.settleUndo(n, 'purged')).toBe(false);
    expect(await a.undoRecord(n)).toEqual(purged);
    expect(purged?.state).toBe('purged');
    expect(await b.settleUndo(nonce(), 'restored')).toBe(false);
    expect(await b.undoRecord(nonce())).toBeUndefined();
  });

  test('what retention purges: held records past their expiry, oldest first, at most as many as asked', async () => {
    const { stores: [a, b] } = await undoStores();
    const now = Date.parse('2026-06-01T00:00:00.000Z');
    const [jan, feb, mar, settled, atNow, later] = [nonce(), nonce(), nonce(), nonce(), nonce(), nonce()];
    await a.recordUndo(undo(mar, { expiresAt: '2026-03-01T00:00:00.000Z' }));
    await b.recordUndo(undo(jan, { expiresAt: '2026-01-01T00:00:00.000Z' }));
    await a.recordUndo(undo(later, { expiresAt: '2026-12-01T00:00:00.000Z' }));
    await b.recordUndo(undo(feb, { expiresAt: '2026-02-01T00:00:00.000Z' }));
    await a.recordUndo(undo(settled, { expiresAt: '2025-12-01T00:00:00.000Z' }));
    await a.recordUndo(undo(atNow, { expiresAt: new Date(now).toISOString() }));
    expect(await a.settleUndo(settled, 'restored')).toBe(true);

    expect(nonces(await b.expiredUndo(now, 10))).toEqual([jan, feb, mar]);
    expect(nonces(await a.expiredUndo(now, 2))).toEqual([jan, feb]);
    // Its expiry is not before now until a moment later.
    expect(nonces(await a.expiredUndo(now + 1, 10))).toEqual([jan, feb, mar, atNow]);
    expect(await a.expiredUndo(Date.parse('2025-01-01T00:00:00.000Z'), 10)).toEqual([]);
    await b.settleUndo(jan, 'purged');
    expect(nonces(await a.expiredUndo(now, 10))).toEqual([feb, mar]);
  });

  test('retention forgets records restored or purged once their undo time ended longer ago than the retention; held ones stay', async () => {
    const { stores: [a, b] } = await undoStores();
    const [restored, purged, held, recent] = [nonce(), nonce(), nonce(), nonce()];
    const ended = new Date(Date.now() - 3 * 86_400_000).toISOString();
    for (const n of [restored, purged, held]) expect(await a.recordUndo(undo(n, { expiresAt: ended }))).toBe(true);
    expect(await a.recordUndo(undo(recent, { expiresAt: new Date(Date.now() + 86_400_000).toISOString() }))).toBe(true);
    expect(await a.settleUndo(restored, 'restored')).toBe(true);
    expect(await b.settleUndo(purged, 'purged')).toBe(true);
    expect(await b.settleUndo(recent, 'restored')).toBe(true);
    // A week's retention keeps all; a day's forgets the two settled three days ago, never a held one or one still in its time.
    expect(await a.pruneUndo(7 * 86_400_000)).toBe(0);
    expect(await b.pruneUndo(86_400_000)).toBe(2);
    expect(await a.undoRecord(restored)).toBeUndefined();
    expect(await a.undoRecord(purged)).toBeUndefined();
    expect(await b.undoRecord(held)).toMatchObject({ state: 'held' });
    expect(await b.undoRecord(recent)).toMatchObject({ state: 'restored' });
  });

  test("a call's record is found among however many newer records its job has", async () => {
    const { stores: [a, b] } = await undoStores();
    const first = nonce();
    await a.recordUndo(undo(first, { jobId: 'job-big', callId: 'call-first', heldAt: '2026-01-01T00:00:00.000Z' }));
    for (let i = 0; i < 1100; i++) await b.recordUndo(undo(nonce(), { jobId: 'job-big', callId: `call-${i}`, heldAt: '2026-02-01T00:00:00.000Z' }));
    expect((await b.undoRecordOfCall('job-big', 'call-first'))?.nonce).toBe(first);
    expect(await a.undoRecordOfCall('job-big', 'call-none')).toBeUndefined();
    expect(await a.undoRecordOfCall('job-other', 'call-first')).toBeUndefined();
  });

  test('held bytes per root: only held records of that root count, from any instance, and only what they set aside', async () => {
    const { stores: [a, b] } = await undoStores();
    const [one, two, other, restored] = [nonce(), nonce(), nonce(), nonce()];
    const held = (bytes: number) => ({ type: 'directory' as const, bytes, files: 2, digest: null, mode: '755' });
    expect(await a.heldBytes('/srv/share')).toBe(0);
    await a.recordUndo(undo(one, { root: '/srv/share', held: held(3_000_000_000) }));
    await b.recordUndo(undo(two, { root: '/srv/share', held: held(5) }));
    await a.recordUndo(undo(other, { root: '/srv/media', held: held(7) }));
    await b.recordUndo(undo(restored, { root: '/srv/share', held: held(1000) }));
    await a.settleUndo(restored, 'restored');
    // What a record sets aside counts (an overwrite's old file, a move's replaced file); an append and a mode change set nothing aside.
    const file = (bytes: number) => ({ type: 'file' as const, bytes, files: null, digest: null, mode: '644' });
    await a.recordUndo(undo(nonce(), { root: '/srv/share', held: file(20), change: { kind: 'replaced', after: 'a'.repeat(64) }, asideBytes: 20 }));
    await a.recordUndo(undo(nonce(), { root: '/srv/share', held: file(9000), change: { kind: 'moved', to: 'sha256:x', replaced: file(15) }, asideBytes: 15 }));
    await b.recordUndo(undo(nonce(), { root: '/srv/share', held: file(400), change: { kind: 'appended', size: 400, after: 'b'.repeat(64), dev: 1, ino: 2 } }));
    await b.recordUndo(undo(nonce(), { root: '/srv/share', held: file(600), change: { kind: 'mode', after: '600', dev: 1, ino: 3 } }));
    expect(await b.heldBytes('/srv/share')).toBe(3_000_000_040);
    expect(await a.heldBytes('/srv/media')).toBe(7);
    expect(await a.heldBytes('/srv')).toBe(0);
  });

  test('the changed path is kept only as its digest: nothing stored or read back holds it in plain text', async () => {
    const { stores: [a, b], stored } = await undoStores();
    const n = nonce();
    // A caller that slipped the plain path in beside the record: the store keeps only the record's own fields.
    const withPath = { ...undo(n, { expiresAt: '2026-01-01T00:00:00.000Z' }), path: '/srv/x/token=abc' };
    expect(await a.recordUndo(withPath)).toBe(true);
    const expired = await b.expiredUndo(Date.now(), 10);
    expect(nonces(expired)).toEqual([n]);
    // Settling rewrites the stored record: it must not bring anything back.
    expect(await b.settleUndo(n, 'restored')).toBe(true);
    const read = [await b.undoRecord(n), expired, await b.undoRecords({ limit: 10 }), await b.undoRecords({ jobId: 'job-u', state: 'restored', limit: 10 })];
    expect(read[0]).toMatchObject({ pathDigest: pathDigest('/srv/x/token=abc'), state: 'restored' });
    expect(read[0]).not.toHaveProperty('path');
    expect(JSON.stringify(read)).not.toContain('token=abc');
    const everything = await stored();
    expect(everything).toContain(n);
    expect(everything).toContain(pathDigest('/srv/x/token=abc').slice('sha256:'.length));
    expect(everything).not.toContain('token=abc');
  });
});

describe.each(backends)('$name content store', (backend) => {
  test('a text is stored under its digest, once, and every worker reads it back exactly', async () => {
    const [a, b] = await backend.contentStores();
    const text = JSON.stringify({ role: 'user', content: `ünïcode ${'x'.repeat(100_000)} ${nonce()}` });
    const digests = await Promise.all([a.put(text), b.put(text), a.put(text)]);
    expect(new Set(digests).size).toBe(1);
    expect(await b.get(digests[0])).toBe(text);
    expect(await a.get('0'.repeat(64))).toBeUndefined();
  });
});

/** Events as an agent worker writes them: sanitized, stamped with their run. */
function events(jobId: string, runId: string, n: number, at = '2026-12-01T10:00:00.000Z'): AuditEvent[] {
  return Array.from({ length: n }, (_, i): AuditEvent =>
    i % 2 === 0
      ? { type: 'policy_evaluation', jobId, runId, at, policyVersion: 'p1', data: { callId: `c${i}`, toolName: 'fs_read', decision: 'allow', outcome: 'run' } }
      : { type: 'tool_executed', jobId, runId, at, policyVersion: 'p1', data: { callId: `c${i}`, toolName: 'fs_read', fingerprint: 'f'.repeat(64), ok: true, replayed: false } },
  );
}

describe.each(backends)('$name content store retention', (backend) => {
  test("a finished job's texts go once it stored nothing for the retention; shared texts stay while a job that needs them runs; texts of no job stay", async () => {
    const [a, b] = await backend.contentStores();
    const tag = nonce();
    const shared = `{"first turn":"${tag}"}`;
    const [ownA, ownB, legacy] = [`{"a":"${tag}"}`, `{"b":"${tag}"}`, `{"legacy":"${tag}"}`];
    const [jobA, jobB] = [`job-a-${tag}`, `job-b-${tag}`];
    const d = { shared: await a.put(shared, jobA), ownA: await a.put(ownA, jobA), ownB: await b.put(ownB, jobB), legacy: await a.put(legacy) };
    await b.put(shared, jobB);
    await sleep(1500);
    // A is over, B is parked (running): A's own text goes, the text B shares stays, and B is asked again only after another period.
    const asked: string[] = [];
    expect(await b.prune(1000, async (job) => (asked.push(job), job === jobB))).toBe(1);
    expect(asked.filter((j) => j === jobA || j === jobB).sort()).toEqual([jobA, jobB].sort());
    expect(await a.get(d.ownA)).toBeUndefined();
    expect(await a.get(d.shared)).toBe(shared);
    expect(await a.get(d.ownB)).toBe(ownB);
    expect(await a.prune(1000, async () => false)).toBe(0);
    await sleep(1500);
    // B is over now too: what was left of it goes; a text stored for no job stays.
    expect(await a.prune(1000, async () => false)).toBe(2);
    expect(await a.get(d.shared)).toBeUndefined();
    expect(await a.get(d.ownB)).toBeUndefined();
    expect(await a.get(d.legacy)).toBe(legacy);
  });
});

describe.each(backends)('$name audit log', (backend) => {
  test('what two workers write is read back in order, whole, with every filter', async () => {
    const { writers: [a, b], reader } = await backend.auditLog();
    const first = events('job-a', 'run-1111', 3);
    const second = events('job-b', 'run-2222', 2);
    const third = events('job-a', 'run-3333', 2, '2026-12-01T11:00:00.000Z');
    await a.write(first);
    await b.write(second);
    await a.write(third);
    expect((await reader.read({ limit: 100 })).events).toEqual([...first, ...second, ...third]);
    expect((await reader.read({ limit: 2 })).events).toEqual(third);
    expect((await reader.read({ limit: 100, jobId: 'job-a' })).events).toEqual([...first, ...third]);
    expect((await reader.read({ limit: 100, jobId: 'job-a', runId: 'run-33' })).events).toEqual(third);
    expect((await reader.read({ limit: 100, type: 'tool_executed' })).events).toEqual([first[1], second[1], third[1]]);
    expect((await reader.read({ limit: 100, jobId: 'nobody' })).events).toEqual([]);
    expect((await reader.read({ limit: 100 })).unreadable).toEqual([]);
  });

  test('an event the job wrote again from a redone workflow task (same id, another time) is kept once', async () => {
    const { writers: [a, b], reader } = await backend.auditLog();
    const first = events('job-w', 'run-w', 3).map((e, i) => ({ ...e, eventId: `run-w:${i}` }));
    const redone = first.map((e) => ({ ...e, at: '2026-12-01T10:00:07.000Z' }));
    await a.write(first);
    await b.write(redone);
    expect((await reader.read({ limit: 100, jobId: 'job-w' })).events).toEqual(first);
  });

  test('a batch holds exactly its events, identical ones included, and the unicode and size they have', async () => {
    const { writers: [a], reader } = await backend.auditLog();
    const twin: AuditEvent = { type: 'approval_rejected', jobId: 'job-t', runId: 'run-t', at: '2026-12-01T10:00:00.000Z', policyVersion: 'p1', data: { requestId: 'r', code: 'already_decided', reason: `ünïcode ✓ ${'x'.repeat(100_000)}`, reviewer: 'bob', via: 'update' } };
    await a.write([twin, twin]);
    expect((await reader.read({ limit: 10, jobId: 'job-t' })).events).toEqual([twin, twin]);
  });
});

describe.each(backends)('$name audit log retention', (backend) => {
  test('events older than the retention are removed, newer ones and lines that are not events kept', async () => {
    const { writers: [a], reader } = await backend.auditLog();
    const now = Date.now();
    // The JSONL file goes by each event's time, the database by when the row was written: old events are written first, then aged.
    const old = events('job-o', 'run-o', 2, new Date(now - 3 * 86_400_000).toISOString());
    await a.write(old);
    await sleep(1500);
    const fresh = events('job-o', 'run-o', 2, new Date(now).toISOString()).map((e, i) => ({ ...e, eventId: `fresh:${i}` }));
    await a.write(fresh);
    const removed = await a.prune(a.idempotent ? 1000 : 86_400_000);
    expect(removed).toBe(2);
    expect((await reader.read({ limit: 100, jobId: 'job-o' })).events).toEqual(fresh);
    expect(await a.prune(a.idempotent ? 1000 : 86_400_000)).toBe(0);
  });
});

test('the JSONL log keeps, through a prune, what is appended while it runs and every line that is not an event', async () => {
  const file = join(mkdtempSync(join(dir, 'p-')), 'audit.jsonl');
  const sink = new JsonlAuditSink(file);
  await sink.write(events('job-p', 'run-p', 3, '2020-01-01T00:00:00.000Z'));
  writeFileSync(file, `${readFileSync(file, 'utf8')}not an event\n`);
  await sink.write(events('job-p', 'run-p', 1, new Date().toISOString()));
  const pruning = sink.prune(86_400_000);
  // Appended while the prune streams the file.
  const late = events('job-late', 'run-l', 1, new Date().toISOString());
  await sink.write(late);
  expect(await pruning).toBe(3);
  const lines = readFileSync(file, 'utf8').trimEnd().split('\n');
  expect(lines).toContain('not an event');
  expect(lines.filter((l) => l.includes('job-late'))).toHaveLength(1);
  expect(lines.filter((l) => l.includes('2020-01-01'))).toEqual([]);
  expect(readFileSync(file, 'utf8').endsWith('\n')).toBe(true);
});

test('the shared database keeps each event once however often its batch is written, so a retried write may write again', async () => {
  const { writers: [a, b], reader } = await backends[1]!.auditLog();
  expect(a.idempotent).toBe(true);
  const batch = events('job-r', 'run-r', 4);
  await a.write(batch);
  // The job sends the batch again (with what came since) after a write it could not confirm; another worker may take it.
  const more = [...batch, ...events('job-r', 'run-r', 1, '2026-12-01T12:00:00.000Z')];
  await Promise.all([b.write(more), a.write(more)]);
  expect((await reader.read({ limit: 100, jobId: 'job-r' })).events).toEqual(more);
  // The JSONL file appends: only a first attempt writes there.
  expect(new JsonlAuditSink(join(dir, 'x.jsonl')).idempotent).toBe(false);
});

/** A real notice (an approval request's), with its own event id. */
function notice(eventId: string): Notice {
  const event: AuditEvent = {
    type: 'approval_requested',
    jobId: 'job-n',
    at: '2026-12-01T10:00:00.000Z',
    policyVersion: 'p1',
    data: { requestId: 'r', callId: 'call_0_0', toolName: 'fs_delete', ruleId: 'rule', ruleVersion: 1, fingerprint: 'f'.repeat(64), requester: 'bob', argsSummary: '{"path":"/srv/x"}', expiresAt: '2026-12-02T10:00:00.000Z', target: '/srv/x', reason: 'why' },
  };
  const made = noticeFor(event, { namespace: 'home', webUiUrl: 'http://ui.lan', approvalPageUrl: undefined });
  if (made === undefined) throw new Error('no notice');
  return { ...made, eventId };
}

describe.each(backends)('$name notification outbox', (backend) => {
  test('a notice is owed once per endpoint, however often it is enqueued, and leased to one worker at a time', async () => {
    const [a, b] = await backend.outboxes();
    expect(await a.enqueue([notice('e1'), notice('e2')], ['p1', 'p2'])).toBe(4);
    expect(await b.enqueue([notice('e1')], ['p1', 'p2'])).toBe(0);
    // Two workers claim at the same moment: each row goes to one of them.
    const [fromA, fromB] = await Promise.all([a.claim('p1', 60_000, 10), b.claim('p1', 60_000, 10)]);
    expect([...fromA, ...fromB].map((d) => d.eventId).sort()).toEqual(['e1', 'e2']);
    expect([...fromA, ...fromB].every((d) => d.attempts === 1)).toBe(true);
    // Leased: nothing more is due on p1, and p1's rows say when they are due again.
    expect(await a.claim('p1', 60_000, 10)).toEqual([]);
    expect(await a.nextDueIn(['p1'])).toBeGreaterThan(50_000);
    expect(await a.nextDueIn(['p2'])).toBeLessThanOrEqual(0);
    expect(await a.nextDueIn([])).toBeUndefined();
  });

  test('delivered, retried later, released and failed rows end as they should; a lease that runs out is taken over', async () => {
    const [a, b] = await backend.outboxes();
    await a.enqueue([notice('d'), notice('r'), notice('x'), notice('f'), notice('l')], ['p']);
    const claimed = new Map((await a.claim('p', 60_000, 4)).map((d) => [d.eventId, d]));
    expect([...claimed.keys()].sort()).toEqual(['d', 'f', 'r', 'x']);
    // A worker that dies with a lease: the row is taken over once it runs out.
    const [dying] = await b.claim('p', 300, 1);
    expect(dying?.eventId).toBe('l');
    await a.delivered(claimed.get('d')!);
    await a.retryIn(claimed.get('r')!, 60_000, 'HTTP 503');
    await a.released(claimed.get('x')!);
    await a.failed(claimed.get('f')!, 'HTTP 404');
    await sleep(600);
    const again = await a.claim('p', 60_000, 10);
    // The released row is due at once and its cut-short attempt was not counted; the dead worker's lease ran out.
    expect(again.map((d) => [d.eventId, d.attempts]).sort()).toEqual([['l', 2], ['x', 1]]);
    const rows = new Map((await b.rows()).map((r) => [r.eventId, r]));
    expect(rows.get('d')).toMatchObject({ state: 'delivered', attempts: 1, lastError: null });
    expect(rows.get('r')).toMatchObject({ state: 'pending', attempts: 1, lastError: 'HTTP 503' });
    expect(rows.get('f')).toMatchObject({ state: 'failed', attempts: 1, lastError: 'HTTP 404' });
    expect(await b.nextDueIn(['p'])).toBeGreaterThan(50_000);
    // Finished rows are forgotten once older than what is kept; rows still owed stay.
    await sleep(50);
    expect(await a.prune(10, ['p'])).toBe(2);
    expect((await a.rows()).map((r) => r.eventId).sort()).toEqual(['l', 'r', 'x']);
  });
});

describe.each(backends)('$name passkey invites', (backend) => {
  test('an invite is read by any process, works once, stays usable after a failed registration, and only its hash is kept', async () => {
    const { stores: [cli, page] } = await backend.invites();
    const { token, expiresAt } = await cli.create('erin');
    expect(expiresAt).toBeGreaterThan(Date.now());
    expect(await page.read(token)).toMatchObject({ reviewer: 'erin', expiresAt });
    await expect(page.consume(token, async () => Promise.reject(new Error('does not verify')))).rejects.toThrow('does not verify');
    expect(await page.read(token)).toMatchObject({ reviewer: 'erin' });
    // Several registrations at once, on both processes: one runs.
    let ran = 0;
    const tries = await Promise.allSettled(
      Array.from({ length: 6 }, (_, i) =>
        (i % 2 === 0 ? cli : page).consume(token, async (invite) => {
          ran++;
          await sleep(50);
          return invite.reviewer;
        }),
      ),
    );
    expect(ran).toBe(1);
    expect(tries.filter((t) => t.status === 'fulfilled').map((t) => (t).value)).toEqual(['erin']);
    for (const t of tries) if (t.status === 'rejected') expect(t.reason).toMatchObject({ reason: 'unknown' });
    await expect(page.read(token)).rejects.toMatchObject({ reason: 'unknown' });
  });

  test('invites that expired longer ago than the retention are forgotten; usable ones stay', async () => {
    const { stores: [cli, page], expire } = await backend.invites();
    const gone = await cli.create('dave');
    const kept = await cli.create('erin');
    await expire(gone.token);
    expect(await page.prune(1000)).toBe(1);
    await expect(page.read(gone.token)).rejects.toMatchObject({ reason: 'unknown' });
    expect(await page.read(kept.token)).toMatchObject({ reviewer: 'erin' });
  });

  test('an expired invite says so, and a cut or unknown token says it is not known', async () => {
    const { stores: [cli, page], expire } = await backend.invites();
    const { token } = await cli.create('carol');
    await expire(token);
    await expect(page.read(token)).rejects.toThrow(/^this registration link for carol expired at /);
    await expect(page.consume(token, async () => 'x')).rejects.toMatchObject({ reason: 'expired' });
    await expect(page.read(token.slice(0, 10))).rejects.toThrow(/is not complete/);
    await expect(page.read('A'.repeat(43))).rejects.toBeInstanceOf(InviteError);
  });
});

test("a worker's retention tasks reach its own stores: the tools side its nonce rows, the agent side its audit log", async () => {
  const data = mkdtempSync(join(dir, 'worker-'));
  const config = parseConfig({ AIRLOCK_DATA_DIR: data, AIRLOCK_RETENTION: '1d', AIRLOCK_AUDIT_RETENTION: '1d' });
  const nonces = kept(new SqliteNonceStore(statePaths(config).nonces));
  const n = nonce();
  await nonces.consume(record(n));
  const audit = new JsonlAuditSink(statePaths(config).audit);
  await audit.write(events('job-r', 'run-r', 2, '2020-01-01T00:00:00.000Z'));
  const tasks = retentionTasks(config, ['agent', 'tools'], undefined, audit);
  expect(tasks.map((t) => t.name)).toEqual(['nonce/outcome rows', 'call journals left by crashes', 'undo records restored or purged', 'held entries past their undo time', 'audit events']);
  // A day's retention keeps the nonce consumed a moment ago (and no journal is there, and no root keeps changes for undo) and removes the events of 2020.
  expect(await Promise.all(tasks.map((t) => t.run()))).toEqual([0, 0, 0, 0, 2]);
  expect(await nonces.lookup(n)).toMatchObject({ consumed: false });
});

describe.each(backends)('$name page challenges', (backend) => {
  test('a challenge is taken once, by one of many takers at the same moment; an expired one by none', async () => {
    const [a, b] = await backend.challenges();
    await a.put('k1', 'challenge-1', 60_000);
    expect(await b.get('k1')).toBe('challenge-1');
    const taken = await Promise.all([a.take('k1'), b.take('k1'), a.take('k1'), b.take('k1')]);
    expect(taken.filter((t) => t !== undefined)).toEqual(['challenge-1']);
    expect(await a.get('k1')).toBeUndefined();
    await b.put('k2', 'challenge-2', 1);
    await sleep(20);
    expect(await a.take('k2')).toBeUndefined();
    expect(await b.take('never-issued')).toBeUndefined();
  });
});

describe.each(backends)('$name passkey counters', (backend) => {
  test('only forward: a higher counter is taken, an equal or lower one from another assertion is not, the same assertion again is', async () => {
    const [a, b] = await backend.passkeyCounters();
    expect(await a.last('cred')).toBeUndefined();
    expect(await a.advance('cred', 5, 'first')).toBe(true);
    expect(await b.last('cred')).toEqual({ counter: 5, assertion: 'first' });
    expect(await b.advance('cred', 5, 'copy')).toBe(false);
    expect(await b.advance('cred', 4, 'older')).toBe(false);
    expect(await b.advance('cred', 5, 'first')).toBe(true);
    expect(await a.advance('cred', 6, 'next')).toBe(true);
    expect(await a.advance('other', 1, 'x')).toBe(true);
  });

  test('two workers presenting the same counter at once: exactly one wins', async () => {
    const [a, b] = await backend.passkeyCounters();
    for (let round = 1; round <= 20; round++) {
      const results = await Promise.all([a.advance('race', round, `a${round}`), b.advance('race', round, `b${round}`)]);
      expect(results.filter((r) => r)).toHaveLength(1);
    }
  });
});

const standingRecord = (id: string, fields: { uses?: number; until?: number; toolName?: string; requester?: string } = {}): StandingRecord => ({
  schemaVersion: 1,
  id,
  reviewer: 'alice',
  createdAt: 1_000,
  until: fields.until ?? Date.now() + 86_400_000,
  uses: fields.uses ?? 3,
  scope: {
    toolName: fields.toolName ?? 'service_restart',
    requester: fields.requester ?? 'nightly',
    scope: { piece: null, movement: null },
    machine: null,
    targets: ['service:jellyfin'],
    args: {},
    varies: [],
    rules: [{ id: 'approve-service-control', version: 1 }],
    reason: 'Restarting needs approval',
    reversible: null,
  },
  origin: { jobId: 'job-1', requestId: 'req-1', fingerprint: 'f'.repeat(64), args: { service: 'jellyfin' }, ruleId: 'approve-service-control', ruleVersion: 1, payload: {} },
});

describe.each(backends)('$name standing approvals', (backend) => {
  test('kept once per id, found by tool and requester by every worker, listed, shown, revoked for all', async () => {
    const [a, b] = await backend.standing();
    const now = Date.now();
    await a.put(standingRecord('S-1'));
    await b.put({ ...standingRecord('S-1'), uses: 50 });
    expect((await b.get('S-1'))?.record.uses).toBe(3);
    await a.put(standingRecord('S-other', { toolName: 'fs_write' }));
    await a.put(standingRecord('S-old', { until: now - 1 }));
    expect((await b.candidates({ toolName: 'service_restart', requester: 'nightly', now })).map((v) => v.record.id)).toEqual(['S-1']);
    expect(await b.candidates({ toolName: 'service_restart', requester: 'someone-else', now })).toEqual([]);
    expect((await a.list({ all: false, now })).map((v) => v.record.id).sort()).toEqual(['S-1', 'S-other']);
    expect((await a.list({ all: true, now })).map((v) => v.record.id).sort()).toEqual(['S-1', 'S-old', 'S-other']);
    expect(await b.revoke('S-1', 'bob', 'moved', now)).toBe('revoked');
    expect(await a.revoke('S-1', 'bob', 'again', now)).toBe('already');
    expect(await a.revoke('S-none', 'bob', 'x', now)).toBe('unknown');
    expect((await a.get('S-1'))?.revoked).toEqual({ at: now, by: 'bob', reason: 'moved' });
    expect(await a.candidates({ toolName: 'service_restart', requester: 'nightly', now })).toEqual([]);
    expect(await a.use('S-1', 'job-2/req-1', now)).toEqual({ ok: false, why: 'revoked' });
    expect(await a.use('S-old', 'job-2/req-1', now)).toEqual({ ok: false, why: 'expired' });
    expect(await a.use('S-none', 'job-2/req-1', now)).toEqual({ ok: false, why: 'unknown' });
  });

  test('a use is taken once per key: the same key again gets the same use, never a second one', async () => {
    const [a, b] = await backend.standing();
    await a.put(standingRecord('S-2', { uses: 2 }));
    const now = Date.now();
    expect(await a.use('S-2', 'job-a/req-1', now)).toEqual({ ok: true, use: 1, left: 1 });
    expect(await b.use('S-2', 'job-a/req-1', now)).toEqual({ ok: true, use: 1, left: 1 });
    expect(await b.use('S-2', 'job-b/req-1', now)).toEqual({ ok: true, use: 2, left: 0 });
    expect(await a.use('S-2', 'job-c/req-1', now)).toEqual({ ok: false, why: 'used_up' });
    // A key that took a use keeps it after the approval is spent or revoked (a retried attempt is answered the same).
    expect(await a.use('S-2', 'job-b/req-1', now)).toEqual({ ok: true, use: 2, left: 0 });
    expect((await b.usesOf('S-2')).map((u) => [u.use, u.useKey])).toEqual([
      [1, 'job-a/req-1'],
      [2, 'job-b/req-1'],
    ]);
    expect((await a.get('S-2'))?.used).toBe(2);
  });

  test('ten uses asked at once by two workers with three left: exactly three are taken', async () => {
    const [a, b] = await backend.standing();
    await a.put(standingRecord('S-3', { uses: 3 }));
    const now = Date.now();
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => (i % 2 === 0 ? a : b).use('S-3', `job-${i}/req-1`, now)));
    const taken = results.filter((r) => r.ok);
    expect(taken).toHaveLength(3);
    expect(taken.map((r) => (r.ok ? r.use : 0)).sort()).toEqual([1, 2, 3]);
    expect(results.filter((r) => !r.ok)).toEqual(Array.from({ length: 7 }, () => ({ ok: false, why: 'used_up' })));
    expect(await b.usesOf('S-3')).toHaveLength(3);
  });
});

describe.each(backends)('$name agent tokens', (backend) => {
  test('a token is known to every process by its hash only; revoked, it says whose it was; a new one works; the old one stays revoked', async () => {
    const { stores: [cli, server], stored } = await backend.agentTokens();
    const { token, createdAt } = await cli.add('alice');
    expect(token).toMatch(/^airlock_agent_[A-Za-z0-9_-]{43}$/);
    expect(Date.parse(createdAt)).toBeGreaterThan(Date.now() - 60_000);
    expect(await server.lookup(token)).toEqual({ kind: 'valid', agent: 'alice' });
    expect(await stored()).not.toContain(token.slice('airlock_agent_'.length));
    // A second active token for the same agent is refused, with what to do.
    await expect(server.add('alice')).rejects.toThrow(/^agent alice already has a token; revoke it first with `airlock agent revoke alice`/);
    await expect(server.add('alice')).rejects.toBeInstanceOf(AgentTokenError);
    const bob = await server.add('bob');
    expect(await cli.lookup(bob.token)).toEqual({ kind: 'valid', agent: 'bob' });

    expect(await server.revoke('alice')).toBe(1);
    expect(await cli.revoke('alice')).toBe(0);
    expect(await cli.lookup(token)).toMatchObject({ kind: 'revoked', agent: 'alice', revokedAt: expect.any(String) });
    const again = await cli.add('alice');
    expect(await server.lookup(again.token)).toEqual({ kind: 'valid', agent: 'alice' });
    expect(await server.lookup(token)).toMatchObject({ kind: 'revoked', agent: 'alice' });

    expect(await server.lookup(`airlock_agent_${'A'.repeat(43)}`)).toEqual({ kind: 'unknown' });
    expect(await server.lookup('not a token')).toEqual({ kind: 'unknown' });
    expect(await server.lookup(token.slice(0, -1))).toEqual({ kind: 'unknown' });
  });

  test('list shows names, times and use, never a token; last use is recorded', async () => {
    const { stores: [cli, server] } = await backend.agentTokens();
    const { token } = await cli.add('carol');
    await cli.add('ci-bot');
    await cli.revoke('ci-bot');
    const mine = (await cli.list()).filter((t) => t.agent === 'carol' || t.agent === 'ci-bot');
    expect(mine.map((t) => ({ agent: t.agent, revoked: t.revokedAt !== null, used: t.lastUsedAt !== null }))).toEqual([
      { agent: 'carol', revoked: false, used: false },
      { agent: 'ci-bot', revoked: true, used: false },
    ]);
    await server.markUsed(token);
    const carol = (await cli.list()).find((t) => t.agent === 'carol');
    expect(Date.parse(carol?.lastUsedAt ?? '')).toBeGreaterThan(Date.now() - 60_000);
    expect(JSON.stringify(await cli.list())).not.toContain(token);
  });

  test('two processes adding a token for one agent at once: exactly one gets it', async () => {
    const { stores: [a, b] } = await backend.agentTokens();
    for (let round = 0; round < 10; round++) {
      const results = await Promise.allSettled([a.add(`race-${round}`), b.add(`race-${round}`), a.add(`race-${round}`)]);
      expect(results.filter((r) => r.status === 'fulfilled')).toHaveLength(1);
      for (const r of results) if (r.status === 'rejected') expect(r.reason).toMatchObject({ reason: 'exists' });
    }
  });
});
