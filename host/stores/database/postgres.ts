import { Pool, type PoolClient, type QueryConfig, type QueryResult, type QueryResultRow } from 'pg';
import { redactUrl } from '../../../core/redaction/redact-url';
import { AirlockError } from '../../../core/util/errors';

/**
 * The one PostgreSQL database a deployment of several machines shares
 * (`AIRLOCK_DATABASE_URL`): a connection pool, transactions, and errors an
 * operator can act on. Nothing here knows a table; the stores do.
 */

/** The variable that names the database; every error about reaching it says to check it. */
export const DATABASE_SETTING = 'AIRLOCK_DATABASE_URL';

/**
 * The database cannot be reached, refuses the login, lacks the database,
 * or is shutting down: what an operator fixes in the setting or the server.
 * Work that meets it is retried; nothing was half-done (each write is one
 * statement or one transaction).
 */
export class DatabaseUnavailable extends AirlockError {
  override name = 'DatabaseUnavailable';
  constructor(
    /** The server as configured, password hidden. */
    readonly target: string,
    /** The variable to fix. */
    readonly setting: string,
    detail: string,
    cause?: unknown,
  ) {
    super(`database ${target}: ${detail}; check ${setting} and that the server is running and reachable from this machine`, { cause });
  }
}

export interface DatabaseOptions {
  /** Connections at most (default 4). */
  readonly maxConnections?: number;
  /** How long one statement may run before the server cancels it (default 15 s); 0 for no limit. */
  readonly statementTimeoutMs?: number;
  /** How long to wait for a connection before failing (default 10 s). */
  readonly connectTimeoutMs?: number;
  /** The variable errors name (default `AIRLOCK_DATABASE_URL`). */
  readonly setting?: string;
  /** Shown in `pg_stat_activity` (default `airlock`). */
  readonly applicationName?: string;
  /**
   * How long a statement keeps being retried while the server is away
   * (down, restarting, the connection cut), once this process has reached
   * it (default 30 s); before that, a problem fails at once, so a wrong
   * setting is said at start-up.
   */
  readonly rideOutMs?: number;
}

/** What a transaction's body may run. */
export interface Queryable {
  query<R extends QueryResultRow>(config: QueryConfig | string): Promise<QueryResult<R>>;
}

// Node's socket errors and PostgreSQL's connection (08), login (28), unknown database (3D000)
// and server shutdown (57P01-57P03) classes: what an operator fixes in the setting or the server.
const NODE_CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE']);
const SERVER_CONNECTION_CODE = /^(08|28|3D000$|57P0[123]$)/;
// pg's own words when a connection ends or never comes.
const DRIVER_CONNECTION_MESSAGE = /Connection terminated|timeout exceeded when trying to connect|connection timeout|Client has encountered a connection error/i;

/** The server's clock in milliseconds, as SQL: leases and delays that several machines share are timed by one clock. */
export const SERVER_NOW_MS = `(extract(epoch from clock_timestamp()) * 1000)::bigint`;

function errorCode(err: unknown): string | undefined {
  if (err === null || typeof err !== 'object' || !('code' in err)) return undefined;
  return typeof err.code === 'string' ? err.code : undefined;
}

/** The server is away for now (restarting, the connection cut): worth waiting for, unlike a refused login or a missing database. */
function isTransient(err: unknown): boolean {
  const code = errorCode(err);
  if (code !== undefined) return code !== 'ENOTFOUND' && !/^(28|3D000$)/.test(code) && (NODE_CONNECTION_CODES.has(code) || SERVER_CONNECTION_CODE.test(code));
  return err instanceof Error && DRIVER_CONNECTION_MESSAGE.test(err.message);
}

function isConnectionProblem(err: unknown): boolean {
  const code = errorCode(err);
  if (code !== undefined && (NODE_CONNECTION_CODES.has(code) || SERVER_CONNECTION_CODE.test(code))) return true;
  return err instanceof Error && DRIVER_CONNECTION_MESSAGE.test(err.message);
}

export class Database {
  private closed = false;
  /** A statement has succeeded: from now on the server being away is an outage to ride out, not a setting to fix. */
  private reached = false;

  private constructor(
    private readonly pool: Pool,
    /** The URL as it may be shown. */
    readonly target: string,
    readonly setting: string,
    private readonly password: string,
    private readonly rideOutMs: number,
  ) {}

  /**
   * A pool for the URL; nothing connects until the first query. TLS is set
   * in the URL as the `psql` tools read it (`?sslmode=verify-full`).
   */
  static open(url: string, options: DatabaseOptions = {}): Database {
    const setting = options.setting ?? DATABASE_SETTING;
    const target = redactUrl(url);
    let password = '';
    let pool: Pool;
    try {
      password = decodeURIComponent(new URL(url).password);
      const statementTimeout = options.statementTimeoutMs ?? 15_000;
      pool = new Pool({
        connectionString: url,
        max: options.maxConnections ?? 4,
        connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
        idleTimeoutMillis: 30_000,
        // An idle pool does not keep a finished process alive.
        allowExitOnIdle: true,
        application_name: options.applicationName ?? 'airlock',
        ...(statementTimeout > 0 ? { statement_timeout: statementTimeout } : {}),
      });
    } catch (err) {
      throw new DatabaseUnavailable(target, setting, `not a usable PostgreSQL URL (${err instanceof Error ? err.message : String(err)})`, err);
    }
    // A connection that breaks while idle is dropped by the pool and replaced on next use;
    // without a listener the pool's 'error' event would end the process.
    pool.on('error', () => undefined);
    return new Database(pool, target, setting, password, options.rideOutMs ?? 30_000);
  }

  /**
   * One statement. While the server is away (after it was reached once),
   * the statement is sent again, for up to `rideOutMs`: every statement the
   * stores send is safe to repeat (an insert-if-absent, a conditional
   * update, a read), including one whose first try took effect and lost
   * its answer, which the stores read as someone else's earlier write.
   */
  async query<R extends QueryResultRow>(config: QueryConfig | string): Promise<QueryResult<R>> {
    const deadline = Date.now() + this.rideOutMs;
    for (let wait = 250; ; wait = Math.min(wait * 2, 2_000)) {
      try {
        const result = await this.pool.query<R>(config);
        this.reached = true;
        return result;
      } catch (err) {
        if (!this.reached || this.closed || !isTransient(err) || Date.now() + wait > deadline) throw this.wrap(err);
        await new Promise((resolve) => setTimeout(resolve, wait));
      }
    }
  }

  /**
   * Runs `body` in one transaction on one connection: all of it or none.
   * A connection that failed is closed rather than reused.
   */
  async transaction<T>(body: (q: Queryable) => Promise<T>): Promise<T> {
    let client: PoolClient;
    try {
      client = await this.pool.connect();
    } catch (err) {
      throw this.wrap(err);
    }
    let failure: Error | undefined;
    try {
      await client.query('BEGIN');
      const result = await body({ query: <R extends QueryResultRow>(config: QueryConfig | string) => client.query<R>(config) });
      await client.query('COMMIT');
      this.reached = true;
      return result;
    } catch (err) {
      failure = err instanceof Error ? err : new Error(String(err));
      await client.query('ROLLBACK').catch(() => undefined);
      throw this.wrap(err);
    } finally {
      client.release(failure !== undefined && isConnectionProblem(failure) ? failure : undefined);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }

  /** A connection problem as the error an operator acts on; anything else as it is. */
  wrap(err: unknown): unknown {
    if (err instanceof DatabaseUnavailable) return err;
    return isConnectionProblem(err) ? new DatabaseUnavailable(this.target, this.setting, this.detail(err), err) : err;
  }

  /** An error's words without the password (PostgreSQL does not echo it; this makes sure). */
  detail(err: unknown): string {
    const message = err instanceof Error && err.message !== '' ? err.message : (errorCode(err) ?? String(err));
    return this.password.length >= 4 ? message.split(this.password).join('***') : message;
  }
}
