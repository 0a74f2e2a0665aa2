import { mkdirSync, mkdtempSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { NonceStoreUnusable } from '../../host/stores/nonces/store';
import { identityFile, SqliteNonceStore as NonceStore } from '../../host/stores/nonces/sqlite';

let dir: string;
let file: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-nonces-'));
  file = join(dir, 'tools', 'nonces.sqlite');
});
afterEach(() => rmSync(dir, { recursive: true, force: true }));

const record = { nonce: 'a'.repeat(32), jobId: 'job', callId: 'c1', fingerprint: 'f'.repeat(64) };

test('a store is created with an identity that it keeps, written beside it and into every row', async () => {
  const store = new NonceStore(file);
  expect(store.origin).toEqual({ kind: 'created' });
  expect(store.id).toMatch(/^[0-9a-f-]{36}$/);
  expect(readFileSync(identityFile(file), 'utf8').trim()).toBe(store.id);
  await store.consume(record);
  await store.close();
  const again = new NonceStore(file);
  expect(again.origin).toEqual({ kind: 'opened' });
  expect(again.id).toBe(store.id);
  await again.close();
  const db = new Database(file, { readonly: true });
  expect(db.prepare('SELECT store_id FROM consumed_nonces').get()).toEqual({ store_id: store.id });
  db.close();
});

test('a store file that is gone while its identity file remains was lost: the new store says so and has a new identity', async () => {
  const first = new NonceStore(file);
  await first.consume(record);
  await first.close();
  for (const f of [file, `${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
  const second = new NonceStore(file);
  expect(second.origin).toEqual({ kind: 'replaced_lost', lostId: first.id });
  expect(second.id).not.toBe(first.id);
  expect(await second.lookup(record.nonce)).toBeUndefined();
  await second.close();
});

test('a file that is not a database stops the store with one line naming the file and what to do', async () => {
  await new NonceStore(file).close();
  for (const f of [`${file}-wal`, `${file}-shm`]) rmSync(f, { force: true });
  writeFileSync(file, 'this is not a database, just text that is long enough to fill a header page '.repeat(20));
  let error: unknown;
  try {
    await new NonceStore(file).close();
  } catch (err) {
    error = err;
  }
  expect(error).toBeInstanceOf(NonceStoreUnusable);
  const message = (error as Error).message;
  expect(message).toContain(`the nonce store ${file} is not a readable SQLite database (file is not a database)`);
  expect(message).toMatch(/restore it from a backup, or move it away .* retried calls will then be reconciled against the file system$/);
  expect(message).not.toContain('\n');
});

test('a store from before identities gains one and keeps its rows', async () => {
  mkdirSync(join(dir, 'tools'));
  const old = new Database(file);
  old.exec('CREATE TABLE consumed_nonces (nonce TEXT PRIMARY KEY, job_id TEXT NOT NULL, call_id TEXT NOT NULL, fingerprint TEXT NOT NULL, consumed_at TEXT NOT NULL, outcome TEXT)');
  old.prepare('INSERT INTO consumed_nonces VALUES (?, ?, ?, ?, ?, ?)').run(record.nonce, 'job', 'c1', record.fingerprint, '2026-01-01T00:00:00.000Z', '{"ok":true}');
  old.close();
  const store = new NonceStore(file);
  expect(store.id).not.toBe('');
  expect(await store.lookup(record.nonce)).toEqual({ consumed: false, consumedAt: '2026-01-01T00:00:00.000Z', outcome: { ok: true, outputBytes: 0, outputSha256: '' } });
  await store.close();
});

test('a store file removed under an open store refuses to consume into the deleted file', async () => {
  const store = new NonceStore(file);
  unlinkSync(file);
  await expect(store.consume(record)).rejects.toThrow(/the nonce store .* was removed or replaced while this worker had it open; restart the tools worker/);
  await store.close();
});
