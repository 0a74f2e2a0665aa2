import { closeSync, fstatSync, lstatSync, mkdirSync, openSync, readSync, renameSync, statSync, unlinkSync, writeFileSync } from 'node:fs';
import Module from 'node:module';
import { dirname, isAbsolute, join } from 'node:path';
import { Script } from 'node:vm';

/**
 * V8's code cache for the CLI's CommonJS modules, kept between runs.
 *
 * Node 20 compiles every module it loads from source on every start (its
 * `module.enableCompileCache` came in Node 22.1, which this hands the folder
 * to instead), and a reviewer's `airlock pending` loads
 * some 450 files: the Temporal client with its protobuf tree, grpc-js, zod
 * and airlock's own. Here each module is compiled with the cache V8 made of
 * it on an earlier run (bytecode of the functions that run used), and the
 * caches a run lacked are written when it exits. Only node builtins are
 * imported: this module loads before everything it speeds up.
 *
 * What a cache may be used for is checked twice: V8 refuses one made by
 * another V8 or with other flags, and an entry names the file it was made
 * from with its size, times and inode, so a file rewritten since (a new
 * build, an upgraded package) compiles from source and gets a new entry.
 * Cached bytecode runs as code, so the folder must be this user's alone
 * (0700, no link); otherwise the cache is not used.
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
  /** Modules compiled from source: no entry, another file's, or refused by V8. */
  compiled: number;
  /** Entries written when the process exited. */
  written: number;
}

type CompileFn = (this: LoadingModule, content: string, filename: string, format?: string) => unknown;
interface LoadingModule {
  exports: unknown;
  require(id: string): unknown;
}

const ENTRY_MAGIC = 'airlock-compile-cache 1';
/** `import(`, also with space or a comment before the parenthesis; a match in a string or comment only costs the cache. */
const DYNAMIC_IMPORT = /\bimport\s*[(/]/;

/** The folder `AIRLOCK_COMPILE_CACHE` and the home folders name, or undefined when the cache is off. */
export function compileCacheFolder(env: NodeJS.ProcessEnv): string | undefined {
  const setting = env.AIRLOCK_COMPILE_CACHE;
  const version = `node-${process.version}-${process.arch}`;
  if (setting === 'off') return undefined;
  if (setting !== undefined && setting !== '') return isAbsolute(setting) ? join(setting, version) : undefined;
  const base = env.XDG_CACHE_HOME !== undefined && isAbsolute(env.XDG_CACHE_HOME) ? env.XDG_CACHE_HOME : env.HOME !== undefined && isAbsolute(env.HOME) ? join(env.HOME, '.cache') : undefined;
  return base === undefined ? undefined : join(base, 'airlock', 'compile', version);
}

/** Made (0700) if missing; used only if it is a real folder of this user's that nobody else can write, nor swap out. */
function privateFolder(folder: string): boolean {
  try {
    mkdirSync(folder, { recursive: true, mode: 0o700 });
    const own = lstatSync(folder);
    const uid = process.getuid?.();
    if (!own.isDirectory() || uid === undefined || own.uid !== uid || (own.mode & 0o077) !== 0) return false;
    // Whoever may write the parent may rename this folder away and put another in its place.
    const parent = lstatSync(dirname(folder));
    const sticky = (parent.mode & 0o1000) !== 0;
    return (parent.uid === uid || parent.uid === 0) && ((parent.mode & 0o022) === 0 || sticky);
  } catch {
    return false;
  }
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

/** The file as it is now: what its entry must have been made from. */
function stampOf(filename: string): string | undefined {
  try {
    const s = statSync(filename, { bigint: true });
    return `${ENTRY_MAGIC}\t${filename}\t${s.size}\t${s.mtimeNs}\t${s.ctimeNs}\t${s.dev}\t${s.ino}\n`;
  } catch {
    return undefined;
  }
}

/** The cached data of an entry made from exactly this file, if there is one. */
function readEntry(path: string, stamp: string): Buffer | undefined {
  let fd: number | undefined;
  try {
    fd = openSync(path, 'r');
    const size = fstatSync(fd).size;
    const head = Buffer.byteLength(stamp);
    if (size <= head) return undefined;
    const data = Buffer.allocUnsafe(size);
    if (readSync(fd, data, 0, size, 0) !== size) return undefined;
    return data.toString('utf8', 0, head) === stamp ? data.subarray(head) : undefined;
  } catch {
    return undefined;
  } finally {
    if (fd !== undefined) closeSync(fd);
  }
}

/** Written whole or not at all: another run may read it at any moment. */
function writeEntry(path: string, stamp: string, data: Buffer): boolean {
  const temporary = `${path}.${process.pid}.tmp`;
  try {
    writeFileSync(temporary, Buffer.concat([Buffer.from(stamp), data]), { mode: 0o600, flag: 'wx' });
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

function originalCompile(): CompileFn | undefined {
  const compile: unknown = Reflect.get(Module.prototype, '_compile');
  return typeof compile === 'function' ? (compile as CompileFn) : undefined;
}

let installed: CompileCacheStats | undefined;

/**
 * Compiles this process's CommonJS modules through the cache in `folder`
 * from now on. Returns undefined, changing nothing, when the folder is not
 * private or this Node has no `_compile` to wrap; also when this Node keeps
 * its own compile cache, which then keeps it in `folder`. Once per process.
 */
export function installCompileCache(folder: string | undefined): CompileCacheStats | undefined {
  if (installed !== undefined) return installed;
  const original = originalCompile();
  if (folder === undefined || original === undefined || !privateFolder(folder)) return undefined;
  // Node 22.1 and later keep such a cache themselves: theirs, in the same private folder, over this one.
  const own: unknown = Reflect.get(Module, 'enableCompileCache');
  if (typeof own === 'function') {
    Reflect.apply(own, Module, [folder]);
    return undefined;
  }
  const stats: CompileCacheStats = { folder, fromCache: 0, compiled: 0, written: 0 };
  const toWrite: Array<{ script: Script; path: string; stamp: string }> = [];

  const compile: CompileFn = function (this: LoadingModule, content, filename, format) {
    // ES modules, scripts with a #! line or a dynamic import() (a script compiled from V8's cache has no loader for
    // it in Node 20), and files that cannot be stat'ed take Node's own way.
    const plain = (format === undefined || format === 'commonjs') && !content.startsWith('#!') && !DYNAMIC_IMPORT.test(content);
    const stamp = plain ? stampOf(filename) : undefined;
    if (stamp === undefined) return original.call(this, content, filename, format);
    const path = join(folder, entryName(filename));
    const cachedData = readEntry(path, stamp);
    let script: Script;
    try {
      script = new Script(Module.wrap(content), { filename, cachedData });
    } catch {
      // Not CommonJS as it stands (ES syntax Node would detect, say): Node's own way reports or handles it.
      return original.call(this, content, filename, format);
    }
    if (cachedData === undefined || script.cachedDataRejected === true) {
      stats.compiled++;
      toWrite.push({ script, path, stamp });
    } else {
      stats.fromCache++;
    }
    const wrapper: unknown = script.runInThisContext({ displayErrors: true });
    if (typeof wrapper !== 'function') return original.call(this, content, filename, format);
    // Node's own require for this module, calling back into it so parent and children are kept as Node keeps them.
    const resolving = Module.createRequire(filename);
    const require = Object.assign((id: string) => this.require(id), {
      resolve: resolving.resolve,
      main: resolving.main,
      extensions: resolving.extensions,
      cache: resolving.cache,
    });
    return Reflect.apply(wrapper, this.exports, [this.exports, require, this, filename, dirname(filename)]);
  };

  Reflect.set(Module.prototype, '_compile', compile);
  // At exit the scripts hold the bytecode of every function the run called, not only of their top level.
  process.once('exit', () => {
    for (const { script, path, stamp } of toWrite) {
      if (writeEntry(path, stamp, script.createCachedData())) stats.written++;
    }
  });
  installed = stats;
  return stats;
}
