import { chmodSync, mkdtempSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SqliteNotificationOutbox } from '../../host/stores/outbox/sqlite';
import { openSqlite } from '../../host/stores/database/sqlite';

/** Every embedded store's file is airlock's alone: its folder 0700, the file 0600 (also one left readable by an older build), in WAL mode. */
test('a SQLite file of airlock state is made private before it is opened, and one left readable is made private again', async () => {
  const dir = join(mkdtempSync(join(tmpdir(), 'airlock-sqlite-')), 'state');
  const db = openSqlite(join(dir, 'a.sqlite'));
  expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
  db.close();
  expect(statSync(dir).mode & 0o777).toBe(0o700);
  expect(statSync(join(dir, 'a.sqlite')).mode & 0o777).toBe(0o600);

  // The outbox opened its file with SQLite's default mode before: such a file is 0600 once opened now.
  const old = join(dir, 'outbox.sqlite');
  writeFileSync(old, '');
  chmodSync(old, 0o644);
  const outbox = new SqliteNotificationOutbox(old);
  await outbox.close();
  expect(statSync(old).mode & 0o777).toBe(0o600);
});
