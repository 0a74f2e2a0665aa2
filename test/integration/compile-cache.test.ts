import { spawnSync } from 'node:child_process';
import { chmodSync, chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, renameSync, rmSync, statSync, symlinkSync, truncateSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { repoRoot } from '../helpers/processes';

/**
 * The CLI's compile cache, in real Node processes on real folders: a run
 * writes what it compiled, the next compiles from it, and nothing it holds
 * is ever run for a file that changed since, nor taken from a folder
 * someone else could write.
 */

const compileCache = join(repoRoot, 'dist', 'cli', 'startup', 'compile-cache.js');
let dir: string;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-compile-cache-'));
});
afterEach(() => {
  rmSync(dir, { recursive: true, force: true });
});

interface Run {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

function node(args: string[], env: NodeJS.ProcessEnv = {}): Run {
  const run = spawnSync(process.execPath, args, { cwd: dir, env: { PATH: process.env.PATH, HOME: join(dir, 'home'), ...env }, encoding: 'utf8', timeout: 60_000 });
  return { status: run.status, stdout: run.stdout, stderr: run.stderr };
}

/** A program that loads `main.js` of `app` through the cache in `folder` and prints what it got and what the cache did. */
function loader(folder: string | undefined): string {
  const file = join(dir, 'load.js');
  writeFileSync(
    file,
    `const cc = require(${JSON.stringify(compileCache)});
const stats = cc.installCompileCache(${folder === undefined ? 'undefined' : JSON.stringify(folder)});
process.on('exit', () => process.stdout.write(JSON.stringify({ stats: stats ?? null }) + '\\n'));
const main = require(${JSON.stringify(join(dir, 'app', 'main.js'))});
Promise.resolve(main.run()).then((value) => process.stdout.write(JSON.stringify({ value }) + '\\n'));
`,
  );
  return file;
}

interface Loaded {
  readonly value: unknown;
  readonly stats: { fromCache: number; compiled: number; written: number; removed: number } | null;
  readonly stderr: string;
}

function load(folder: string | undefined, nodeOptions: string[] = []): Loaded {
  const run = node([...nodeOptions, loader(folder)]);
  const lines = run.stdout.split('\n').filter((l) => l !== '').map((l): Record<string, unknown> => z.record(z.string(), z.unknown()).parse(JSON.parse(l)));
  const value = lines.find((l) => 'value' in l)?.value;
  const reported = lines.find((l) => 'stats' in l);
  if (reported === undefined) throw new Error(`the loader did not finish (${run.status}): ${run.stderr}`);
  const counts = z.object({ fromCache: z.number(), compiled: z.number(), written: z.number(), removed: z.number() });
  return { value, stats: counts.nullable().parse(reported.stats), stderr: run.stderr };
}

/** An app of three CommonJS modules, a fourth that imports an ES module dynamically (so Node compiles it), and that ES module. */
function writeApp(answer: string): void {
  mkdirSync(join(dir, 'app', 'lib'), { recursive: true });
  writeFileSync(join(dir, 'app', 'lib', 'answer.js'), `exports.answer = ${JSON.stringify(answer)};\n`);
  writeFileSync(join(dir, 'app', 'lib', 'esm.mjs'), 'export const kind = "esm";\n');
  writeFileSync(join(dir, 'app', 'lib', 'dynamic.js'), 'exports.kind = async () => (await import("./esm.mjs")).kind;\n');
  writeFileSync(
    join(dir, 'app', 'lib', 'where.js'),
    'module.exports = { file: __filename, dir: __dirname, resolved: require.resolve("./answer"), parentIsMain: module.parent === require.cache[require.resolve("../main")] };\n',
  );
  writeFileSync(
    join(dir, 'app', 'main.js'),
    `const { answer } = require('./lib/answer');
const where = require('./lib/where');
function shout(n) { return n <= 0 ? answer.toUpperCase() : shout(n - 1); }
exports.run = async () => ({ answer: shout(3), where, esm: await require('./lib/dynamic').kind(), children: module.children.length });
`,
  );
}

const folder = () => join(dir, 'cache');
/** The folder the CLI would use, as a Node started with these options computes it. */
const compileCacheFolderOf = (env: NodeJS.ProcessEnv): string | undefined => {
  const run = node(['-e', `process.stdout.write(require(${JSON.stringify(compileCache)}).compileCacheFolder(process.env) ?? '')`], env);
  return run.stdout === '' ? undefined : run.stdout;
};
const entries = () => readdirSync(folder()).filter((f) => f.endsWith('.bin'));

test('the first run writes an entry per module it compiled; the next compiles every module from them and behaves the same', () => {
  writeApp('forty-two');
  const first = load(folder());
  expect(first.stats).toMatchObject({ fromCache: 0, compiled: 3, written: 3 });
  const expected = {
    answer: 'FORTY-TWO',
    where: { file: join(dir, 'app', 'lib', 'where.js'), dir: join(dir, 'app', 'lib'), resolved: join(dir, 'app', 'lib', 'answer.js'), parentIsMain: true },
    esm: 'esm',
    children: 3,
  };
  expect(first.value).toEqual(expected);
  expect(entries()).toHaveLength(3);
  expect(statSync(folder()).mode & 0o777).toBe(0o700);
  for (const entry of entries()) expect(statSync(join(folder(), entry)).mode & 0o777).toBe(0o600);

  const second = load(folder());
  expect(second.stats).toMatchObject({ fromCache: 3, compiled: 0, written: 0 });
  expect(second.value).toEqual(expected);
  // Node's own loading gives the same.
  expect(load(undefined)).toEqual({ value: expected, stats: null, stderr: '' });
  expect(first.stderr).toBe('');
  expect(second.stderr).toBe('');
});

test('an entry serves only the very source it was made from: a rewrite of the same size and times compiles anew', () => {
  writeApp('aaaa');
  const file = join(dir, 'app', 'lib', 'answer.js');
  const before = new Date('2020-01-01T00:00:00Z');
  utimesSync(file, before, before);
  load(folder());
  writeFileSync(file, readFileSync(file, 'utf8').replace('aaaa', 'bbbb'));
  // Same size, same modification time: only the text differs, and the entry is of the old text.
  utimesSync(file, before, before);
  expect(statSync(file, { bigint: true }).mtimeNs).toBe(BigInt(before.getTime()) * 1_000_000n);
  const after = load(folder());
  expect(after.value).toMatchObject({ answer: 'BBBB' });
  expect(after.stats).toMatchObject({ fromCache: 2, compiled: 1, written: 1 });
  expect(load(folder()).stats).toMatchObject({ fromCache: 3, compiled: 0, written: 0 });
});

test('an entry cut short or of another kind is compiled past and written again', () => {
  writeApp('x');
  load(folder());
  const [cut, garbage] = entries().map((e) => join(folder(), e));
  if (cut === undefined || garbage === undefined) throw new Error('expected entries');
  truncateSync(cut, statSync(cut).size - 100);
  writeFileSync(garbage, 'not an entry');
  const after = load(folder());
  expect(after.value).toMatchObject({ answer: 'X' });
  expect(after.stats).toMatchObject({ fromCache: 1, compiled: 2, written: 2 });
  expect(load(folder()).stats).toMatchObject({ fromCache: 3, compiled: 0, written: 0 });
});

test('a folder another user or group could write, or a link, is not used: nothing is read from it or written', () => {
  writeApp('x');
  mkdirSync(folder(), { mode: 0o700 });
  chmodSync(folder(), 0o770);
  expect(load(folder()).stats).toBeNull();
  expect(entries()).toEqual([]);

  // The folder is private, but anyone may swap it out of a world-writable parent without the sticky bit.
  const open = join(dir, 'open');
  mkdirSync(join(open, 'cache'), { recursive: true, mode: 0o700 });
  chmodSync(open, 0o777);
  expect(load(join(open, 'cache')).stats).toBeNull();

  // As root: a private folder of another user's (who could put their entries in it).
  if (process.getuid?.() === 0) {
    const theirs = join(dir, 'theirs');
    mkdirSync(theirs, { mode: 0o700 });
    chownSync(theirs, 65534, 65534);
    expect(load(theirs).stats).toBeNull();
  }

  // Any folder above, however far: whoever may write it may swap what is below.
  const far = join(dir, 'far');
  mkdirSync(join(far, 'a', 'b', 'cache'), { recursive: true, mode: 0o700 });
  chmodSync(far, 0o757);
  expect(load(join(far, 'a', 'b', 'cache')).stats).toBeNull();
  // A sticky folder others may write (as /tmp) lets no one else rename what is ours.
  chmodSync(far, 0o1777);
  expect(load(join(far, 'a', 'b', 'cache')).stats).toMatchObject({ compiled: 3 });

  const real = join(dir, 'real');
  mkdirSync(real, { mode: 0o700 });
  symlinkSync(real, join(dir, 'linked'));
  expect(load(join(dir, 'linked')).stats).toBeNull();
  expect(readdirSync(real)).toEqual([]);
});

test('an entry that is a link, a FIFO, or (as root) another user\'s file is never read', () => {
  writeApp('x');
  load(folder());
  const [linked, fifo, foreign] = entries().map((e) => join(folder(), e));
  if (linked === undefined || fifo === undefined || foreign === undefined) throw new Error('expected three entries');
  // A link to a good entry: were it followed, the module would count as compiled from the cache.
  renameSync(linked, `${linked}.kept`);
  symlinkSync(`${linked}.kept`, linked);
  rmSync(fifo);
  spawnSync('mkfifo', [fifo]);
  expect(statSync(fifo).isFIFO()).toBe(true);
  const expectedFromCache = process.getuid?.() === 0 ? 0 : 1;
  if (process.getuid?.() === 0) chownSync(foreign, 65534, 65534);
  const after = load(folder());
  expect(after.value).toMatchObject({ answer: 'X' });
  expect(after.stats).toMatchObject({ fromCache: expectedFromCache, compiled: 3 - expectedFromCache });
});

test('where Node checks or maps modules itself (a policy, source maps), the cache stays out of the way', () => {
  writeApp('x');
  expect(load(folder(), ['--enable-source-maps']).stats).toBeNull();
  const policy = join(dir, 'policy.json');
  writeFileSync(policy, JSON.stringify({ onerror: 'log', resources: {} }));
  expect(load(folder(), [`--experimental-policy=${policy}`]).stats).toBeNull();
  expect(existsSync(folder())).toBe(false);
});

test('stack traces and module resolution read as under Node\'s own loader', () => {
  mkdirSync(join(dir, 'app', 'extra', 'only-here'), { recursive: true });
  writeFileSync(join(dir, 'app', 'extra', 'only-here', 'index.js'), 'module.exports = "found";\n');
  // One line, as minified code is: the column of the throw must be the source's own.
  writeFileSync(
    join(dir, 'app', 'main.js'),
    'module.paths.unshift(require("path").join(__dirname, "extra")); exports.run = () => { let column; try { throw new Error("here"); } catch (e) { column = e.stack.split("\\n")[1].split(":").slice(-2).join(":"); } return { column, resolved: require.resolve("only-here"), loaded: require("only-here") }; };\n',
  );
  const own = load(undefined).value;
  expect(own).toMatchObject({ column: expect.stringMatching(/^1:\d+\)?$/), loaded: 'found' });
  load(folder());
  const cached = load(folder());
  expect(cached.stats).toMatchObject({ fromCache: 2, compiled: 0 });
  expect(cached.value).toEqual(own);
});

test('runs with other Node options keep their own folder; entries of files that are gone are removed', () => {
  writeApp('x');
  const cli = compileCacheFolderOf({ AIRLOCK_COMPILE_CACHE: folder() });
  expect(cli).toMatch(new RegExp(`^${folder()}/node-${process.version}-${process.arch}-[0-9a-f]{12}$`));
  const other = compileCacheFolderOf({ AIRLOCK_COMPILE_CACHE: folder(), NODE_OPTIONS: '--max-old-space-size=1000' });
  expect(other).not.toBe(cli);

  load(folder());
  writeFileSync(join(dir, 'app', 'lib', 'gone.js'), 'exports.gone = true;\n');
  writeFileSync(join(dir, 'app', 'main.js'), `${readFileSync(join(dir, 'app', 'main.js'), 'utf8')}require('./lib/gone');\n`);
  expect(load(folder()).stats).toMatchObject({ fromCache: 2, compiled: 2, written: 2, removed: 0 });
  expect(entries()).toHaveLength(4);
  rmSync(join(dir, 'app', 'lib', 'gone.js'));
  writeFileSync(join(dir, 'app', 'main.js'), readFileSync(join(dir, 'app', 'main.js'), 'utf8').replace("require('./lib/gone');\n", ''));
  expect(load(folder()).stats).toMatchObject({ compiled: 1, written: 1, removed: 1 });
  expect(entries()).toHaveLength(3);
});

test('errors a module throws and syntax errors read as without the cache', () => {
  mkdirSync(join(dir, 'app'), { recursive: true });
  writeFileSync(join(dir, 'app', 'main.js'), 'exports.run = () => 1;\nrequire("./broken");\n');
  writeFileSync(join(dir, 'app', 'broken.js'), 'const a = 1;\nthrow new Error("broken at load");\n');
  const thrown = node([loader(folder())]);
  expect(thrown.status).not.toBe(0);
  expect(thrown.stderr).toContain('Error: broken at load');
  expect(thrown.stderr).toContain(`${join(dir, 'app', 'broken.js')}:2`);

  writeFileSync(join(dir, 'app', 'broken.js'), 'const a = ;\n');
  const bad = node([loader(folder())]);
  expect(bad.status).not.toBe(0);
  expect(bad.stderr).toContain('SyntaxError: Unexpected token');
  expect(bad.stderr).toContain(join(dir, 'app', 'broken.js'));
});

describe('the CLI', () => {
  const cli = join(repoRoot, 'bin', 'airlock.js');

  test('keeps its cache under ~/.cache/airlock by default and prints the same with it, without it, and from it', () => {
    const off = node([cli, 'rules', 'list', '--json'], { AIRLOCK_COMPILE_CACHE: 'off' });
    expect(off.status).toBe(0);
    expect(readdirSync(dir)).not.toContain('home');
    const first = node([cli, 'rules', 'list', '--json']);
    const compile = join(dir, 'home', '.cache', 'airlock', 'compile');
    const [version = ''] = readdirSync(compile);
    expect(version).toMatch(new RegExp(`^node-${process.version}-${process.arch}-[0-9a-f]{12}$`));
    const home = join(compile, version);
    const written = readdirSync(home).filter((f) => f.endsWith('.bin'));
    // Airlock's own modules, zod, yaml: far more than a handful.
    expect(written.length).toBeGreaterThan(50);
    const stamps = written.map((f) => statSync(join(home, f)).mtimeMs);
    const second = node([cli, 'rules', 'list', '--json']);
    expect([first, second]).toEqual([off, off]);
    // Every entry was taken as it was: none rewritten.
    expect(written.map((f) => statSync(join(home, f)).mtimeMs)).toEqual(stamps);
  });

  test('AIRLOCK_COMPILE_CACHE names the folder; a value that is neither off nor absolute is one clear error', () => {
    const chosen = join(dir, 'chosen');
    expect(node([cli, 'rules', 'list'], { AIRLOCK_COMPILE_CACHE: chosen }).status).toBe(0);
    const [version = ''] = readdirSync(chosen);
    expect(readdirSync(join(chosen, version)).length).toBeGreaterThan(50);

    const bad = node([cli, 'rules', 'list'], { AIRLOCK_COMPILE_CACHE: 'cache' });
    expect(bad.status).not.toBe(0);
    expect(bad.stderr.trim().split('\n')).toEqual([expect.stringContaining('AIRLOCK_COMPILE_CACHE: expected off or an absolute folder')]);
    expect(readdirSync(dir)).not.toContain('cache');
  });
});
