import { createHash } from 'node:crypto';
import { readFileSync, readlinkSync, statSync } from 'node:fs';
import { isAbsolute, join } from 'node:path';
import { privateFolder } from '../private-folder';

/**
 * Where the resident CLI process of this user, this build and this
 * environment listens, and the identity it answers to. Only node builtins:
 * the short client reads this before anything else loads.
 *
 * One resident process serves one identity: the same user, groups,
 * capabilities, seccomp filters, no_new_privs, resource limits and
 * namespaces (a sandboxed process of the same user has its own), the same
 * Node with the same options, the same build of airlock (its package file
 * and compiled entry points, as they are on disk now), and the same values
 * of the variables read when a process starts. A rebuild, another
 * `NODE_OPTIONS` or a container names another socket, so a process never
 * serves code or settings other than the caller's; one left behind ends
 * when idle. Every other variable comes with each request: the resident
 * process runs the command under the request's whole environment. The
 * identity is what the caller says of itself (Node cannot ask the kernel
 * who is at the other end of a Unix socket).
 */

export const RESIDENT_PROTOCOL = 1;

/**
 * Variables read when a process starts, not when a command runs: part of
 * the identity. Node's, libuv's, OpenSSL's, gRPC's, the dynamic loader's
 * and libc's (`LD_PRELOAD` wrappers such as torsocks act on the process
 * they start in), the resolver's, the locale and airlock's own two.
 */
const readAtStart = (name: string): boolean =>
  /^(NODE_|UV_|OPENSSL_|SSL_CERT_|GRPC_|LD_|MALLOC_|GLIBC_|LC_)/.test(name) ||
  /^(LANG|LANGUAGE|TZ|RES_OPTIONS|LOCALDOMAIN|HOSTALIASES|AIRLOCK_COMPILE_CACHE|AIRLOCK_CLI_RESIDENT_IDLE)$/.test(name);

/** The files whose change is a new build: what the client and the resident process run. */
const buildFiles = ['package.json', 'dist/.tsbuildinfo', 'dist/cli/main.js', 'dist/cli/resident/serve.js', 'dist/cli/resident/client.js'];

/** A Unix socket's path must fit in `sun_path` (108 bytes on Linux, with its terminating zero). */
const MAX_SOCKET_PATH = 107;

export interface ResidentPlace {
  readonly folder: string;
  readonly socket: string;
  /** A new resident process is starting: no second one is started while this is young. */
  readonly starting: string;
  readonly identity: string;
}

/** `$XDG_RUNTIME_DIR/airlock`, else `$XDG_CACHE_HOME/airlock/resident`, else `~/.cache/airlock/resident`. */
function baseFolder(env: NodeJS.ProcessEnv): string | undefined {
  if (env.XDG_RUNTIME_DIR !== undefined && isAbsolute(env.XDG_RUNTIME_DIR)) return join(env.XDG_RUNTIME_DIR, 'airlock');
  if (env.XDG_CACHE_HOME !== undefined && isAbsolute(env.XDG_CACHE_HOME)) return join(env.XDG_CACHE_HOME, 'airlock', 'resident');
  return env.HOME !== undefined && isAbsolute(env.HOME) ? join(env.HOME, '.cache', 'airlock', 'resident') : undefined;
}

function fileStamp(path: string): string {
  try {
    const s = statSync(path, { bigint: true });
    return `${s.size}:${s.mtimeNs}:${s.ino}`;
  } catch {
    return 'none';
  }
}

function readOr(read: () => string, otherwise = 'none'): string {
  try {
    return read();
  } catch {
    return otherwise;
  }
}

/** The lines of /proc/self/status that say what this process may do: capabilities, seccomp filters, no_new_privs (a Landlock sandbox needs it). */
const confinement = /^(CapInh|CapPrm|CapEff|CapBnd|CapAmb|NoNewPrivs|Seccomp|Seccomp_filters):.*$/gm;

/**
 * What this process may do and sees, beyond its user: groups, capabilities,
 * seccomp and no_new_privs, resource limits, namespaces and root folder
 * (Linux; elsewhere the user alone).
 */
function standing(): unknown {
  return {
    gid: process.getgid?.(),
    groups: process.getgroups?.().sort((a, b) => a - b),
    confined: readOr(() => (readFileSync('/proc/self/status', 'utf8').match(confinement) ?? []).join('\n')),
    limits: readOr(() => readFileSync('/proc/self/limits', 'utf8')),
    ns: namespaces.map((ns) => readOr(() => readlinkSync(`/proc/self/ns/${ns}`))),
    root: readOr(() => {
      const s = statSync('/', { bigint: true });
      return `${s.dev}:${s.ino}`;
    }),
  };
}

const namespaces = ['mnt', 'net', 'pid', 'user', 'ipc', 'uts', 'cgroup'];

/** The identity of a process started as this one with this environment, from this package folder. */
export function residentIdentity(env: NodeJS.ProcessEnv, packageRoot: string): string {
  const kept = Object.entries(env)
    .filter((entry): entry is [string, string] => entry[1] !== undefined && readAtStart(entry[0]))
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const described = JSON.stringify({
    protocol: RESIDENT_PROTOCOL,
    uid: process.getuid?.(),
    standing: standing(),
    node: [process.version, process.arch, process.execPath, process.execArgv],
    build: [packageRoot, ...buildFiles.map((f) => fileStamp(join(packageRoot, f)))],
    env: kept,
  });
  return createHash('sha256').update(described).digest('hex').slice(0, 32);
}

/**
 * The place for this environment, or undefined where there is none: no
 * user id or home, a folder that is not this user's alone, a path too long
 * for a socket.
 */
export function residentPlace(env: NodeJS.ProcessEnv, packageRoot: string): ResidentPlace | undefined {
  const uid = process.getuid?.();
  const folder = baseFolder(env);
  if (uid === undefined || folder === undefined) return undefined;
  const identity = residentIdentity(env, packageRoot);
  const socket = join(folder, `cli-${identity}.sock`);
  if (Buffer.byteLength(socket) > MAX_SOCKET_PATH || !privateFolder(folder, uid)) return undefined;
  return { folder, socket, starting: join(folder, `cli-${identity}.starting`), identity };
}

/**
 * `AIRLOCK_CLI_RESIDENT`: `auto` (unset) uses a resident process that runs
 * and starts one from a terminal (a script's commands leave none behind),
 * `always` starts one also without a terminal, `off` runs every command in
 * its own process. Any other value is `off` here; the configuration says
 * what is wrong with it.
 */
export type ResidentSetting = 'auto' | 'always' | 'off';

export function residentSetting(env: NodeJS.ProcessEnv): ResidentSetting {
  const setting = env.AIRLOCK_CLI_RESIDENT;
  if (setting === undefined || setting === '' || setting === 'auto') return 'auto';
  return setting === 'always' ? 'always' : 'off';
}
