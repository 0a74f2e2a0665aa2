import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { appendFileSync, chownSync, existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { delimiter, dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { AirlockError } from '../../core/util/errors';
import { spawnDetached, type StartedProcess } from './processes';

const run = promisify(execFile);

/** PostgreSQL could not be found, set up or reached. */
export class TopologyDatabaseError extends AirlockError {
  override name = 'TopologyDatabaseError';
}

/** Where Debian (and Ubuntu) put the server binaries of each installed major version. */
const DEBIAN_PREFIX = '/usr/lib/postgresql';

/** The first folder holding every one of `programs`: the newest Debian version's, else one on PATH. */
export function postgresBinDir(env: NodeJS.ProcessEnv, programs: readonly string[]): string | undefined {
  const versions = existsSync(DEBIAN_PREFIX)
    ? readdirSync(DEBIAN_PREFIX)
        .filter((v) => /^[0-9]+(\.[0-9]+)?$/.test(v))
        .sort((a, b) => Number(b) - Number(a))
    : [];
  const candidates = [...versions.map((v) => join(DEBIAN_PREFIX, v, 'bin')), ...(env.PATH ?? '').split(delimiter).filter((d) => d !== '')];
  return candidates.find((dir) => programs.every((program) => existsSync(join(dir, program))));
}

/** The folder holding initdb and postgres, or an error saying how to get them. */
export function findPostgresBin(env: NodeJS.ProcessEnv): string {
  const found = postgresBinDir(env, ['initdb', 'postgres']);
  if (found === undefined) {
    throw new TopologyDatabaseError(
      'PostgreSQL server programs (initdb, postgres) were not found in /usr/lib/postgresql/*/bin or on PATH: ' +
        "install Debian's package (`apt-get install -y postgresql`), or give an existing server with --database-url",
    );
  }
  return found;
}

/** PostgreSQL refuses to run as root: a root caller runs it as the package's `postgres` user. */
export async function postgresUser(): Promise<{ uid: number; gid: number } | undefined> {
  if (process.getuid?.() !== 0) return undefined;
  try {
    const uid = Number((await run('id', ['-u', 'postgres'])).stdout.trim());
    const gid = Number((await run('id', ['-g', 'postgres'])).stdout.trim());
    if (uid > 0 && gid > 0) return { uid, gid };
  } catch {
    // Falls through to the error below.
  }
  throw new TopologyDatabaseError('running as root, and there is no `postgres` user to run the private PostgreSQL as: run as another user, or give --database-url');
}

export interface PrivatePostgresInput {
  readonly bin: string;
  /** `<dir>/postgres`: the data folder, socket, password file. */
  readonly folder: string;
  readonly data: string;
  readonly port: number;
  readonly log: string;
}

/** The superuser's password, made at initdb and kept beside the data (0600). */
const passwordFile = (folder: string) => join(folder, 'password');

/** The password, made the first time it is asked for (before initdb, which is given it). */
function passwordOf(folder: string): string {
  const file = passwordFile(folder);
  if (!existsSync(file)) {
    mkdirSync(folder, { recursive: true, mode: 0o700 });
    writeFileSync(file, `${randomBytes(18).toString('base64url')}\n`, { mode: 0o600, flag: 'wx' });
  }
  return readFileSync(file, 'utf8').trim();
}

export function privateUrl(folder: string, port: number, database: string): string {
  const password = passwordOf(folder);
  return `postgres://airlock:${encodeURIComponent(password)}@127.0.0.1:${port}/${database}`;
}

/**
 * A private PostgreSQL in the topology's folder: created once with initdb
 * (password authentication only, listening on 127.0.0.1), then started as a
 * process of its own. A root caller runs it as `postgres`, which must be
 * able to reach the folder.
 */
export async function startPrivatePostgres(input: PrivatePostgresInput): Promise<StartedProcess> {
  const user = await postgresUser();
  mkdirSync(input.folder, { recursive: true, mode: 0o700 });
  if (user !== undefined) chownSync(input.folder, user.uid, user.gid);
  if (user !== undefined) requireReachable(input.folder, user);
  const asServer = { cwd: input.folder, env: { PATH: process.env.PATH, LC_ALL: 'C' }, ...(user ?? {}) };
  if (!existsSync(join(input.data, 'PG_VERSION'))) {
    const pw = passwordFile(input.folder);
    passwordOf(input.folder);
    if (user !== undefined) chownSync(pw, user.uid, user.gid);
    try {
      await run(join(input.bin, 'initdb'), ['-D', input.data, '-U', 'airlock', '--auth=scram-sha-256', `--pwfile=${pw}`, '--encoding=UTF8', '--locale=C'], asServer);
    } catch (err) {
      throw new TopologyDatabaseError(`initdb failed in ${input.data}: ${(err as { stderr?: string }).stderr?.trim() ?? String(err)}`);
    }
    appendFileSync(join(input.data, 'postgresql.conf'), [`port = ${input.port}`, "listen_addresses = '127.0.0.1'", `unix_socket_directories = '${input.folder}'`, ''].join('\n'));
  }
  return spawnDetached({ command: join(input.bin, 'postgres'), args: ['-D', input.data], env: asServer.env, log: input.log, cwd: input.folder, ...(user ?? {}) });
}

/** Every folder above `folder` must let the server's user pass, or initdb fails with a riddle. */
function requireReachable(folder: string, user: { uid: number; gid: number }): void {
  for (let dir = dirname(folder); ; dir = dirname(dir)) {
    const info = statSync(dir);
    const bit = info.uid === user.uid ? 0o100 : info.gid === user.gid ? 0o010 : 0o001;
    if ((info.mode & bit) === 0) {
      throw new TopologyDatabaseError(
        `the private PostgreSQL runs as the postgres user, which cannot enter ${dir}: choose a --dir it can reach (e.g. under /srv or /var/lib), or give --database-url`,
      );
    }
    if (dirname(dir) === dir) return;
  }
}

/** Creates the databases that are missing (Temporal's SQL tool makes its own two). */
export async function ensureDatabases(url: string, names: readonly string[]): Promise<void> {
  const { Client } = await import('pg');
  const client = new Client({ connectionString: url });
  await client.connect();
  try {
    for (const name of names) {
      const found = await client.query('select 1 from pg_database where datname = $1', [name]);
      if (found.rowCount === 0) await client.query(`create database "${name.replace(/"/g, '""')}"`);
    }
  } finally {
    await client.end();
  }
}

/** Whether Temporal's SQL tool has set up versioning in the database (false when the database does not exist yet). */
export async function hasSchemaVersion(url: (database: string) => string, database: string): Promise<boolean> {
  const { Client } = await import('pg');
  const client = new Client({ connectionString: url(database) });
  try {
    await client.connect();
  } catch {
    // No such database yet.
    return false;
  }
  try {
    const found = await client.query("select 1 from information_schema.tables where table_name = 'schema_version'");
    return (found.rowCount ?? 0) > 0;
  } finally {
    await client.end();
  }
}
