import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Sqlite from 'better-sqlite3';
import type { ObservedState } from '../../core/tools/observed-state';
import { SealedStatesNonceStore } from '../../host/stores/nonces/sealed-states';
import { SqliteNonceStore } from '../../host/stores/nonces/sqlite';
import { AesGcmCodec, ensureCodecKeys, loadCodecKeys } from '../../host/temporal/payload-codec';

/**
 * With payload keys, what a call recorded of its targets (a service's
 * name and state, a command's program) is stored encrypted in the nonce
 * store, and read back whole for reconciliation; without the key it is
 * read as a row without states, never as a crash.
 */
let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-sealed-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const codecFor = (name: string) => {
  const file = join(dir, `${name}.yaml`);
  ensureCodecKeys(file);
  return new AesGcmCodec(loadCodecKeys(file));
};

const before: ObservedState[] = [
  { kind: 'service', service: 'jellyfin', adapter: 'docker', exists: true, identity: 'c0ffee', running: true, health: 'healthy', status: 'running', facts: { image: 'jellyfin/jellyfin' } },
  { path: '/srv/media/film.mkv', exists: false },
];

test('the states go in encrypted and come out whole; a store with another key reads a row without states', async () => {
  const file = join(dir, 'nonces.sqlite');
  const plain = new SqliteNonceStore(file);
  const sealed = new SealedStatesNonceStore(plain, codecFor('keys'));
  const nonce = 'ab'.repeat(16);
  expect(await sealed.consume({ nonce, jobId: 'j', callId: 'c', fingerprint: 'f'.repeat(64), before })).toEqual({ consumed: true });
  const raw = JSON.stringify(new Sqlite(file, { readonly: true }).prepare('SELECT * FROM consumed_nonces').all());
  for (const secret of ['jellyfin', 'c0ffee', 'film.mkv', 'running']) expect(raw).not.toContain(secret);
  expect(readFileSync(file).includes(Buffer.from('jellyfin'))).toBe(false);
  expect((await sealed.lookup(nonce))?.before).toEqual(before);
  const again = await sealed.consume({ nonce, jobId: 'j', callId: 'c', fingerprint: 'f'.repeat(64), before });
  expect(again.consumed === false ? again.before : undefined).toEqual(before);
  const stranger = new SealedStatesNonceStore(plain, codecFor('other-keys'));
  const seen = await stranger.lookup(nonce);
  expect(seen).toMatchObject({ consumed: false, outcome: null });
  expect(seen?.before).toBeUndefined();
  await plain.close();
});

test('rows written before the keys existed are read as they are', async () => {
  const plain = new SqliteNonceStore(join(dir, 'older.sqlite'));
  const nonce = 'cd'.repeat(16);
  await plain.consume({ nonce, jobId: 'j', callId: 'c', fingerprint: 'f'.repeat(64), before: [before[0]!] });
  expect((await new SealedStatesNonceStore(plain, codecFor('keys')).lookup(nonce))?.before).toEqual([before[0]]);
  await plain.close();
});
