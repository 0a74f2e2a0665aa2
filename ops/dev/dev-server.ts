import { spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { Connection } from '@temporalio/client';
import { AirlockError } from '../../core/util/errors';
import { ensureSearchAttributes } from '../temporal/search-attributes';
import { TEMPORAL_DYNAMIC_CONFIG } from '../temporal/dynamic-config';
import { isPortFree } from './ports';
import { describeProcess, listeningPid } from './process-info';
import { removeServerPidFile, writeServerPidFile } from './server-pid-file';

/** The Temporal dev server could not be started or did not become ready. */
export class DevServerError extends AirlockError {
  override name = 'DevServerError';
}

export interface DevServerOptions {
  /** Path to the `temporal` binary. */
  readonly cli: string;
  readonly ip?: string;
  readonly port: number;
  /** Web UI port; omit for a headless server. */
  readonly uiPort?: number;
  /** SQLite file for persistent state; omit for an in-memory server. */
  readonly dbFile?: string;
  /** Namespaces to create (besides "default"); airlock's search attributes are registered in all of them. */
  readonly namespaces?: readonly string[];
  /** Added to (and overriding) airlock's own, `TEMPORAL_DYNAMIC_CONFIG`. */
  readonly dynamicConfig?: Readonly<Record<string, string | number | boolean>>;
  readonly readyTimeoutMs?: number;
  /** Own process group, so a terminal's Ctrl-C reaches only airlock, which then stops the server last. */
  readonly ownProcessGroup?: boolean;
  /** Receives the server's own log lines (not with `logFile`). */
  readonly onOutput?: (line: string) => void;
  /**
   * Where the server's output goes (rewritten at each start) instead of a
   * pipe to this process: whether a server outlives a killed stack then
   * does not depend on whether it happens to write (a write to a closed
   * pipe ends it), and the next start finds it by its pid file.
   */
  readonly logFile?: string;
  /** The Web UI's remote codec endpoint (see `airlock codec-server`). */
  readonly uiCodecEndpoint?: string;
  /**
   * Where the server's pid is kept while it runs (with `dbFile`), so a
   * start after this process was killed finds the server it left behind.
   */
  readonly pidFile?: string;
}

/** Who listens on a port, when this machine tells. */
function portHolder(port: number): string {
  const pid = listeningPid(port);
  return pid === undefined ? '' : ` by ${describeProcess(pid)}`;
}

export interface DevServer {
  readonly address: string;
  readonly uiUrl: string | undefined;
  readonly pid: number | undefined;
  readonly namespaces: readonly string[];
  /** Resolves with the exit code when the server process ends. */
  readonly exited: Promise<number | null>;
  stop(): Promise<void>;
}

/**
 * Starts `temporal server start-dev`, waits until it answers, and registers
 * airlock's search attributes (creating only the missing ones).
 */
export async function startDevServer(options: DevServerOptions): Promise<DevServer> {
  const ip = options.ip ?? '127.0.0.1';
  const address = `${ip}:${options.port}`;
  if (!(await isPortFree(options.port, ip))) {
    throw new DevServerError(
      `${address} is already in use${portHolder(options.port) || ' (perhaps by another Temporal server or airlock dev)'}; stop it, or choose another port with TEMPORAL_ADDRESS`,
    );
  }
  if (options.uiPort !== undefined && !(await isPortFree(options.uiPort, ip))) {
    throw new DevServerError(`Web UI port ${options.uiPort} is already in use${portHolder(options.uiPort)}; stop what uses it or set AIRLOCK_UI_PORT`);
  }
  const namespaces = ['default', ...(options.namespaces ?? []).filter((n) => n !== 'default')];
  const args = ['server', 'start-dev', '--ip', ip, '--port', String(options.port), '--log-level', 'warn'];
  args.push(...(options.uiPort === undefined ? ['--headless'] : ['--ui-port', String(options.uiPort)]));
  if (options.dbFile !== undefined) args.push('--db-filename', options.dbFile);
  if (options.uiCodecEndpoint !== undefined) args.push('--ui-codec-endpoint', options.uiCodecEndpoint);
  for (const ns of namespaces.slice(1)) args.push('--namespace', ns);
  for (const [key, value] of Object.entries({ ...TEMPORAL_DYNAMIC_CONFIG, ...options.dynamicConfig })) {
    args.push('--dynamic-config-value', `${key}=${JSON.stringify(value)}`);
  }

  // The server inherits the umask: its database (every job's history) is created 0600, not world-readable.
  const umask = process.umask(0o077);
  let child: ChildProcess;
  const logFd = options.logFile === undefined ? undefined : openSync(options.logFile, 'w', 0o600);
  try {
    child = spawn(options.cli, args, { stdio: ['ignore', logFd ?? 'pipe', logFd ?? 'pipe'], detached: options.ownProcessGroup ?? false });
  } finally {
    process.umask(umask);
    if (logFd !== undefined) closeSync(logFd);
  }
  const pidFile = options.pidFile;
  if (pidFile !== undefined && options.dbFile !== undefined && child.pid !== undefined) {
    writeServerPidFile(pidFile, { pid: child.pid, dbFile: options.dbFile, address });
  }
  const tail: string[] = [];
  const onChunk = (chunk: Buffer) => {
    for (const line of chunk.toString('utf8').split('\n')) {
      if (line.trim() === '') continue;
      tail.push(line);
      if (tail.length > 20) tail.shift();
      options.onOutput?.(line);
    }
  };
  child.stdout?.on('data', onChunk);
  child.stderr?.on('data', onChunk);
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.once('error', () => resolve(-1));
  });
  let hasExited = false;
  // Never leave a server behind when this process ends, however it ends.
  const killOnExit = () => child.kill('SIGKILL');
  process.once('exit', killOnExit);
  void exited.then(() => {
    hasExited = true;
    process.off('exit', killOnExit);
    if (pidFile !== undefined) removeServerPidFile(pidFile, child.pid);
  });

  const stop = async (): Promise<void> => {
    if (hasExited) return;
    child.kill('SIGTERM');
    const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(killer);
  };

  try {
    const deadline = Date.now() + (options.readyTimeoutMs ?? 60_000);
    let connection: Connection | undefined;
    while (connection === undefined) {
      if (hasExited) {
        const last = options.logFile === undefined ? tail : logTail(options.logFile);
        throw new DevServerError(`the Temporal dev server exited during start-up: ${last.slice(-5).join(' | ') || '(no output)'}`);
      }
      if (Date.now() > deadline) {
        throw new DevServerError(`the Temporal dev server at ${address} did not become ready in time`);
      }
      try {
        const candidate = await Connection.connect({ address, connectTimeout: 1000 });
        await candidate.workflowService.getSystemInfo({});
        connection = candidate;
      } catch {
        await new Promise((r) => setTimeout(r, 250));
      }
    }
    try {
      for (const namespace of namespaces) {
        await waitForNamespace(connection, namespace, deadline);
        await ensureSearchAttributes(connection, namespace);
      }
    } finally {
      await connection.close();
    }
  } catch (err) {
    await stop();
    throw err;
  }

  return {
    address,
    uiUrl: options.uiPort === undefined ? undefined : `http://${ip}:${options.uiPort}`,
    pid: child.pid,
    namespaces,
    exited,
    stop,
  };
}

function logTail(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter((line) => line.trim() !== '').slice(-5);
  } catch {
    return [];
  }
}

async function waitForNamespace(connection: Connection, namespace: string, deadline: number): Promise<void> {
  for (;;) {
    try {
      await connection.workflowService.describeNamespace({ namespace });
      return;
    } catch (err) {
      if (Date.now() > deadline) throw new DevServerError(`namespace ${namespace} did not appear: ${String(err)}`, { cause: err });
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}
