import * as crypto from 'node:crypto';
import { closeSync, constants as fsConstants, fstatSync, openSync, readdirSync, readSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import Module from 'node:module';
import { dirname, isAbsolute, join } from 'node:path';
import { Script } from 'node:vm';
import { privateFolder } from '../private-folder';

/**
 * V8's code cache for the CLI's CommonJS modules, kept between runs.
 *
 * Node 20 compiles every module it loads from source on every start (its
 * `module.enableCompileCache` came in Node 22.1, which this hands the
 * folder to instead), and a reviewer's `airlock pending` loads some 450
 * files: the Temporal client with its protobuf tree, grpc-js, zod and
 * airlock's own. Here each module is compiled with the cache V8 made of it
 * on an earlier run (bytecode of the functions that run used), and the
 * caches a run lacked are written when it exits. Only node builtins are
 * imported: this module loads before everything it speeds up.
 *
 * An entry is used only for the very source it was made from: it names the
 * file and the SHA-256 of the text Node read (V8 itself checks no more than
 * the source's length), and V8 refuses one made by another V8 or under
 * other flags (each set of Node options gets its own folder, so runs with
 * different options do not rewrite each other's entries). Cached bytecode
 * runs as code, so the folder, every folder above it and every entry must
 * be this user's alone (or root's, for the folders above; a folder others
 * may write only with the sticky bit), and nothing on the way a link;
 * otherwise the cache is not used. Not used either where Node checks or
 * maps modules itself (`--experimental-policy`, source maps).
 *
 * `AIRLOCK_COMPILE_CACHE`: unset keeps it under `$XDG_CACHE_HOME/airlock`
 * (or `~/.cache/airlock`), an absolute folder keeps it there, `off` turns
 * it off. Any other value leaves it off here; the configuration reports it.
 */

/** What one process did with the cache, for tests and the bench. */
export interface CompileCacheStats {
  readonly folder: string;
  /** Modules compiled with an entry V8 accepted. */
  fromCache: number;
  /** Modules compiled from source: no entry, another source's, or refused by V8. */
  compiled: number;
  /** Entries written when the process exited. */
  written: number;
  /** Entries of files that are gone, removed when the process exited. */
  removed: number;
}

type CompileFn = (this: LoadingModule, content: string, filename: string, format?: string) => unknown;
interface LoadingModule {
  exports: unknown;
  require(id: string): unknown;
}

const ENTRY_MAGIC = 'airlock-compile-cache 2';
/** `import(`, also with space or a comment before the parenthesis; a match in a string or comment only costs the cache. */
const DYNAMIC_IMPORT = /\bimport\s*[(/]/;
/** The longest header read back: magic, a path and a digest. */
const HEADER_MAX = 8192;

/** The options this Node runs under: its command line's, then NODE_OPTIONS'. */
const nodeOptions = (env: NodeJS.ProcessEnv): string[] => [...process.execArgv, ...(env.NODE_OPTIONS ?? '').split(/\s+/).filter((o) => o !== '')];

/** Where the entries of every Node go: `AIRLOCK_COMPILE_CACHE`, or under the user's cache folder. */
function baseFolder(env: NodeJS.ProcessEnv): string | undefined {
  const setting = env.AIRLOCK_COMPILE_CACHE;
  if (setting !== undefined && setting !== '') return isAbsolute(setting) ? setting : undefined;
  if (env.XDG_CACHE_HOME !== undefined && isAbsolute(env.XDG_CACHE_HOME)) return join(env.XDG_CACHE_HOME, 'airlock', 'compile');
  return env.HOME !== undefined && isAbsolute(env.HOME) ? join(env.HOME, '.cache', 'airlock', 'compile') : undefined;
}

/** The folder `AIRLOCK_COMPILE_CACHE` and the home folders name, or undefined when the cache is off. */
export function compileCacheFolder(env: NodeJS.ProcessEnv): string | undefined {
  const base = env.AIRLOCK_COMPILE_CACHE === 'off' ? undefined : baseFolder(env);
  if (base === undefined) return undefined;
  // The options are part of the name: V8 refuses a cache made under other options.
  const options = crypto.createHash('sha256').update(nodeOptions(env).join('\0')).digest('hex').slice(0, 12);
  return join(base, `node-${process.version}-${process.arch}-${options}`);
}

/** Where Node checks modules against a policy or maps their stack traces: its own loader only. */
function nodeChecksModules(env: NodeJS.ProcessEnv): boolean {
  return Reflect.get(process, 'sourceMapsEnabled') === true || nodeOptions(env).some((o) => o.startsWith('--experimental-policy') || o.startsWith('--policy-integrity') || o === '--enable-source-maps');
}

/** A short, stable name for a module's entry; the entry itself names the file, so a collision is only a miss. */
function entryName(filename: string): string {
  let a = 0x811c9dc5;
  let b = 0x01000193;
  for (let i = 0; i < filename.length; i++) {
    const c = filename.charCodeAt(i);
    a = Math.imul(a ^ c, 0x01000193) >>> 0;
    b = Math.imul(b ^ c, 0x5bd1e995) >>> 0;
  }
  return `${a.toString(16).padStart(8, '0')}${b.toString(16).padStart(8, '0')}.bin`;
}

/** The SHA-256 of the source, one-shot where this Node has it. */
function digestOf(content: string): string {
  const hash: unknown = Reflect.get(crypto, 'hash');
  if (typeof hash === 'function') {
    const digest: unknown = Reflect.apply(hash, crypto, ['sha256', content, 'base64']);
    if (typeof digest === 'string') return digest;
  }
  return crypto.createHash('sha256').update(content).digest('base64');
}

/** What an entry made from exactly this source begins with. */
const headerOf = (filename: string, content: string): string => `${ENTRY_MAGIC}\t${filename}\t${digestOf(content)}\n`;

/** An entry's bytes, only from a regular file of this user's that no one else may write, reached by no link. */
function readOwnFile(path: string, uid: number, limit = Number.POSITIVE_INFINITY): Buffer | undefined {
  let fd: number | undefined;
  try {
    // Non-blocking: a FIFO planted in its place must not stall the CLI (it is refused below).
    fd = openSync(path, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
    const s = fstatSync(fd);
    if (!s.isFile() || s.uid !== uid || (s.mode & 0o022) !== 0) return undefined;
    const size = Math.min(s.size, limit);
    const data = Buffer.allocUnsafe(size);
    return readSync(fd, data, 0, size, 0) === size ? data : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** The cached data of an entry made from exactly this source, if there is one. */
function readEntry(path: string, header: string, uid: number): Buffer | undefined {
  const data = readOwnFile(path, uid);
  const head = Buffer.byteLength(header);
  if (data === undefined || data.length <= head) return undefined;
  return data.toString('utf8', 0, head) === header ? data.subarray(head) : undefined;
}

/** Written whole or not at all: another run may read it at any moment. */
function writeEntry(path: string, header: string, data: Buffer): boolean {
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, Buffer.concat([Buffer.from(header), data]), { mode: 0o600, flag: 'wx' });
    renameSync(temporary, path);
    return true;
  } catch {
    try {
      unlinkSync(temporary);
    } catch {
      // Never made, or already gone.
    }
    return false;
  }
}

/** Removes the entries of files that no longer exist (an old checkout, a package removed): the folder holds no more than what is installed. */
function removeGone(folder: string, uid: number): number {
  let removed = 0;
  try {
    for (const name of readdirSync(folder)) {
      if (!name.endsWith('.bin')) continue;
      const head = readOwnFile(join(folder, name), uid, HEADER_MAX)?.toString('utf8');
      const filename = head?.startsWith(`${ENTRY_MAGIC}\t`) === true ? head.split('\t')[1] : undefined;
      let gone = filename === undefined;
      if (filename !== undefined) {
        try {
          statSync(filename);
        } catch {
          gone = true;
        }
      }
      if (gone) {
        unlinkSync(join(folder, name));
        removed++;
      }
    }
  } catch {
    // A folder that cannot be read through is left as it is.
  }
  return removed;
}

function originalCompile(): CompileFn | undefined {
  const compile: unknown = Reflect.get(Module.prototype, '_compile');
  return typeof compile === 'function' ? (compile as CompileFn) : undefined;
}

/**
 * Makes, for a module, Node's resolution from that module itself (its own
 * `paths`), as Node's require of that module has; Node's internals are
 * looked up once.
 */
function resolvers(): (module: LoadingModule, filename: string) => NodeJS.RequireResolve {
  const resolveFilename: unknown = Reflect.get(Module, '_resolveFilename');
  const lookupPaths: unknown = Reflect.get(Module, '_resolveLookupPaths');
  if (typeof resolveFilename !== 'function' || typeof lookupPaths !== 'function') return (_module, filename) => Module.createRequire(filename).resolve;
  return (module) => {
    const resolve = (request: string, options?: { paths?: string[] }): string => {
      const resolved: unknown = Reflect.apply(resolveFilename, Module, [request, module, false, options]);
      return String(resolved);
    };
    const paths = (request: string): string[] | null => {
      const found: unknown = Reflect.apply(lookupPaths, Module, [request, module]);
      return Array.isArray(found) ? found.map(String) : null;
    };
    return Object.assign(resolve, { paths });
  };
}

let installed: CompileCacheStats | undefined;

/**
 * Compiles this process's CommonJS modules through the cache in `folder`
 * from now on. Returns undefined, changing nothing, when the folder is not
 * private, Node checks or maps modules itself, or this Node has no
 * `_compile` to wrap; also when this Node keeps its own compile cache,
 * which then keeps it in `folder`. Once per process.
 */
export function installCompileCache(folder: string | undefined, env: NodeJS.ProcessEnv = process.env): CompileCacheStats | undefined {
  if (installed !== undefined) return installed;
  const original = originalCompile();
  const uid = process.getuid?.();
  if (folder === undefined || original === undefined || uid === undefined || nodeChecksModules(env) || !privateFolder(folder, uid)) return undefined;
  // Node 22.1 and later keep such a cache themselves: theirs, in the same private folder, over this one.
  const own: unknown = Reflect.get(Module, 'enableCompileCache');
  if (typeof own === 'function') {
    Reflect.apply(own, Module, [folder]);
    return undefined;
  }
  const stats: CompileCacheStats = { folder, fromCache: 0, compiled: 0, written: 0, removed: 0 };
  const toWrite: Array<{ script: Script; path: string; header: string }> = [];
  // What Module.wrap puts before the source, on its first line.
  const prefixLength = Module.wrap('\u0000').indexOf('\u0000');
  const resolverFor = resolvers();
  // The process's main module, extensions and module cache: the same for every module's require.
  const shared = Module.createRequire(folder);

  const compile: CompileFn = function (this: LoadingModule, content, filename, format) {
    // ES modules, scripts with a #! line or a dynamic import() (a script compiled from V8's cache has no loader for
    // it in Node 20) take Node's own way.
    const plain = (format === undefined || format === 'commonjs') && !content.startsWith('#!') && !DYNAMIC_IMPORT.test(content);
    if (!plain) return original.call(this, content, filename, format);
    const header = headerOf(filename, content);
    const path = join(folder, entryName(filename));
    const cachedData = readEntry(path, header, uid);
    let script: Script;
    try {
      // The wrapper shares the first line: columns there are counted from where the source starts, as Node counts them.
      script = new Script(Module.wrap(content), { filename, cachedData, columnOffset: -prefixLength });
    } catch {
      // Not CommonJS as it stands (ES syntax Node would detect, say): Node's own way reports or handles it.
      return original.call(this, content, filename, format);
    }
    if (cachedData === undefined || script.cachedDataRejected === true) {
      stats.compiled++;
      toWrite.push({ script, path, header });
    } else {
      stats.fromCache++;
    }
    const wrapper: unknown = script.runInThisContext({ displayErrors: true });
    if (typeof wrapper !== 'function') return original.call(this, content, filename, format);
    // Node's own require for this module: loads through it (parent and children kept as Node keeps them) and
    // resolves from its own paths.
    const require = Object.assign((id: string) => this.require(id), {
      resolve: resolverFor(this, filename),
      main: shared.main,
      extensions: shared.extensions,
      cache: shared.cache,
    });
    return Reflect.apply(wrapper, this.exports, [this.exports, require, this, filename, dirname(filename)]);
  };

  Reflect.set(Module.prototype, '_compile', compile);
  // At exit the scripts hold the bytecode of every function the run called, not only of their top level.
  process.once('exit', () => {
    for (const { script, path, header } of toWrite) {
      if (writeEntry(path, header, script.createCachedData())) stats.written++;
    }
    // Only when something changed (a new build, an upgrade): the files left behind are checked then.
    if (stats.written > 0) stats.removed = removeGone(folder, uid);
  });
  installed = stats;
  return stats;
}
