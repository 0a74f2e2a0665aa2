import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseConfig } from '../../core/config/config';
import { stateInsideRoots } from '../../host/config/state-outside-roots';
import { spawnNode } from '../helpers/processes';

/**
 * The tools never reach airlock's own files: a tools worker whose roots
 * hold the data folder (keys, nonce store, journals), the rules file or
 * the tools config stops at start, in one line saying which and what to do.
 */
let dir: string;

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-state-roots-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const base = () => ({ PATH: process.env.PATH, HOME: process.env.HOME, TEMPORAL_ADDRESS: '127.0.0.1:1' });

async function startRefused(env: NodeJS.ProcessEnv): Promise<string> {
  const worker = spawnNode('dist/workers/airlock-tools.js', [], env);
  expect(await worker.exited()).not.toBe(0);
  const lines = worker.output().trim().split('\n');
  expect(lines).toHaveLength(1);
  expect(lines[0]).not.toMatch(/\n\s+at /);
  return lines[0] ?? '';
}

test('a root holding the data folder: the tools worker stops at start', async () => {
  const share = join(dir, 'share');
  mkdirSync(join(share, 'airlock'), { recursive: true });
  const line = await startRefused({ ...base(), AIRLOCK_ROOTS: share, AIRLOCK_DATA_DIR: join(share, 'airlock') });
  expect(line).toContain(`the data folder (AIRLOCK_DATA_DIR) ${join(share, 'airlock')} lies inside the root ${share}`);
  expect(line).toMatch(/choose roots that do not contain airlock's own files/);
});

test('the same through a link to the root, and the data folder as the root itself', async () => {
  const real = join(dir, 'real');
  mkdirSync(join(real, 'data'), { recursive: true });
  symlinkSync(real, join(dir, 'alias'));
  expect(await startRefused({ ...base(), AIRLOCK_ROOTS: join(dir, 'alias'), AIRLOCK_DATA_DIR: join(real, 'data') })).toContain('the data folder');
  expect(await startRefused({ ...base(), AIRLOCK_ROOTS: join(real, 'data'), AIRLOCK_DATA_DIR: join(real, 'data') })).toContain('the data folder');
});

test('a tools config inside its own root: the worker stops at start', async () => {
  const srv = join(dir, 'srv');
  mkdirSync(srv);
  const file = join(srv, 'tools.yaml');
  writeFileSync(file, `version: 1\nroots: [${srv}]\n`);
  const line = await startRefused({ ...base(), AIRLOCK_TOOLS_CONFIG: file, AIRLOCK_DATA_DIR: join(dir, 'data-tc') });
  expect(line).toContain(`the tools config (AIRLOCK_TOOLS_CONFIG) ${file} lies inside the root ${srv}`);
});

test('what counts: the default sandbox inside the data folder is fine; keys, rules and files not yet created inside a root are not', async () => {
  const data = join(dir, 'data-ok');
  mkdirSync(join(data, 'sandbox'), { recursive: true });
  expect(await stateInsideRoots(parseConfig({ AIRLOCK_DATA_DIR: data }), [join(data, 'sandbox')], undefined)).toEqual([]);
  const root = join(dir, 'root-x');
  mkdirSync(root);
  const config = parseConfig({
    AIRLOCK_DATA_DIR: join(dir, 'data-x'),
    AIRLOCK_RULES_FILE: join(root, 'policy', 'rules.yaml'),
    AIRLOCK_GRANT_PUBLIC_KEY: join(root, 'grant.pub.pem'),
  });
  expect(await stateInsideRoots(config, [root], undefined)).toEqual([
    `the rules file (AIRLOCK_RULES_FILE) ${join(root, 'policy', 'rules.yaml')} lies inside the root ${root}, where the tools could read or rewrite it`,
    `the grant public key ${join(root, 'grant.pub.pem')} lies inside the root ${root}, where the tools could read or rewrite it`,
  ]);
});
