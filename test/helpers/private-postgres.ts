import { execFile } from 'node:child_process';
import { appendFileSync, chownSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from 'pg';
import { freePort } from './ports';
import { postgresBinDir } from '../../ops/topology/postgres';

const run = promisify(execFile);

export const POSTGRES_MISSING =
  'PostgreSQL server binaries (initdb, pg_ctl) were not found in /usr/lib/postgresql/*/bin or on PATH; ' +
  "install Debian's package with `sudo apt-get install -y postgresql` (`.ci/run` does this on a fresh machine)";

export interface PrivatePostgres {
  readonly port: number;
  /** A URL for a database of this server; trust authentication, so any password is accepted. */
  url(database?: string): string;
  /** Runs one statement on a database of this server directly, as an operator would with psql; its rows. */
  sql<R extends Record<string, unknown>>(text: string, values?: unknown[], database?: string): Promise<R[]>;
  /**
   * Stops the server, keeping its data, as a restart does (fast shutdown:
   * connections are cut, commits are kept); `resume` starts it again on the
   * same port. (An immediate stop would be a crash, and with this server's
   * durability off for speed, it could lose commits a real server keeps.)
   */
  halt(): Promise<void>;
  resume(): Promise<void>;
  /** Stops the server and removes its folder. */
  stop(): Promise<void>;
}

/** The folder holding initdb and pg_ctl: the newest Debian version, else PATH. */
function findBinDir(): string {
  const found = postgresBinDir(process.env, ['initdb', 'pg_ctl']);
  if (found === undefined) throw new Error(POSTGRES_MISSING);
  return found;
}

/** PostgreSQL refuses to run as root: then the server runs as the package's `postgres` user (or nobody). */
async function serverUser(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  for (const name of ['postgres', 'nobody']) {
    try {
      const uid = Number((await run('id', ['-u', name])).stdout.trim());
      const gid = Number((await run('id', ['-g', name])).stdout.trim());
      if (uid > 0 && gid > 0) return { uid, gid };
    } catch {
      // No such user: try the next.
    }
  }
  throw new Error('running as root and found neither a `postgres` nor a `nobody` user to run the private PostgreSQL as');
}

/**
 * A private PostgreSQL for one test file: `initdb` into a temporary folder,
 * `pg_ctl` on its own port on 127.0.0.1 with trust authentication, the
 * socket in the same folder, durability off. Fails (never skips) when the
 * binaries are missing, saying how to install them.
 */
export async function startPrivatePostgres(): Promise<PrivatePostgres> {
  const bin = findBinDir();
  const user = await serverUser();
  const dir = mkdtempSync(join(tmpdir(), 'airlock-pg-'));
  if (user !== undefined) chownSync(dir, user.uid, user.gid);
  const data = join(dir, 'data');
  const log = join(dir, 'postgres.log');
  const asServer = { cwd: dir, env: { PATH: process.env.PATH, LC_ALL: 'C' }, ...(user ?? {}) };
  const pgCtl = (args: string[]) => run(join(bin, 'pg_ctl'), ['-D', data, ...args], asServer);

  try {
    await run(join(bin, 'initdb'), ['-D', data, '-U', 'airlock', '--auth=trust', '--encoding=UTF8', '--locale=C', '--no-sync'], asServer);
    // A port found free may be taken before the server binds it: then another one.
    for (let attempt = 1; ; attempt++) {
      const port = await freePort();
      appendFileSync(
        join(data, 'postgresql.conf'),
        [
          `port = ${port}`,
          "listen_addresses = '127.0.0.1'",
          `unix_socket_directories = '${dir}'`,
          'fsync = off',
          'synchronous_commit = off',
          'full_page_writes = off',
          '',
        ].join('\n'),
      );
      try {
        await pgCtl(['-l', log, '-w', '-t', '60', 'start']);
      } catch (err) {
        const text = existsSync(log) ? readFileSync(log, 'utf8') : '';
        if (attempt < 3 && /could not bind|already in use/i.test(text)) continue;
        throw new Error(`private PostgreSQL did not start: ${err instanceof Error ? err.message : String(err)}\n${text}`);
      }
      let stopped = false;
      return {
        port,
        url: (database = 'postgres') => `postgres://airlock@127.0.0.1:${port}/${database}`,
        async sql<R extends Record<string, unknown>>(text: string, values: unknown[] = [], database = 'postgres'): Promise<R[]> {
          const client = new Client({ connectionString: `postgres://airlock@127.0.0.1:${port}/${database}` });
          await client.connect();
          try {
            return (await client.query<R>(text, values)).rows;
          } finally {
            await client.end();
          }
        },
        async halt() {
          await pgCtl(['-m', 'fast', '-w', 'stop']);
        },
        async resume() {
          await pgCtl(['-l', log, '-w', '-t', '60', 'start']);
        },
        async stop() {
          if (stopped) return;
          stopped = true;
          try {
            await pgCtl(['-m', 'immediate', '-w', 'stop']);
          } finally {
            rmSync(dir, { recursive: true, force: true });
          }
        },
      };
    }
  } catch (err) {
    await pgCtl(['-m', 'immediate', '-w', 'stop']).catch(() => undefined);
    rmSync(dir, { recursive: true, force: true });
    throw err;
  }
}
