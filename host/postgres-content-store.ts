import { Pool, type QueryConfig, type QueryResultRow } from 'pg';
import { AirlockError } from '../core/util/errors';
import { redactUrl } from '../core/redaction/redact-url';
import { digestOf, type ContentStore } from './content-store';

/** The setting that names the server; every connection error says to check it. */
const SETTING = 'AIRLOCK_CONTENT_DB';

/** The content store's PostgreSQL server cannot be reached, refuses the login, or lacks the database. */
export class ContentStoreConnectionError extends AirlockError {
  override name = 'ContentStoreConnectionError';
  constructor(
    /** The server as configured, password hidden. */
    readonly target: string,
    /** The variable to fix. */
    readonly setting: string,
    detail: string,
    cause?: unknown,
  ) {
    super(`content store ${target}: ${detail}; check ${setting} and that the server is running and reachable from this worker`, { cause });
  }
}

export interface PostgresContentStoreOptions {
  /** Connections at most (default 4): each model turn reads and writes a few small rows. */
  readonly maxConnections?: number;
  /** How long to wait for a connection before failing (default 10 s). */
  readonly connectTimeoutMs?: number;
}

const CREATE_TABLE = `CREATE TABLE IF NOT EXISTS airlock_contents (
  digest text PRIMARY KEY,
  text text NOT NULL,
  stored_at timestamptz NOT NULL DEFAULT now()
)`;

// Node's socket errors and PostgreSQL's connection (08), login (28), unknown database (3D000)
// and server shutdown (57P01-57P03) classes: what an operator fixes in the setting or the server.
const NODE_CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE']);
const SERVER_CONNECTION_CODE = /^(08|28|3D000$|57P0[123]$)/;
// pg's own words when a connection ends or never comes.
const DRIVER_CONNECTION_MESSAGE = /Connection terminated|timeout exceeded when trying to connect|connection timeout/i;

function errorCode(err: unknown): string | undefined {
  if (err === null || typeof err !== 'object' || !('code' in err)) return undefined;
  return typeof err.code === 'string' ? err.code : undefined;
}

function isConnectionProblem(err: unknown): boolean {
  const code = errorCode(err);
  if (code !== undefined && (NODE_CONNECTION_CODES.has(code) || SERVER_CONNECTION_CODE.test(code))) return true;
  return err instanceof Error && DRIVER_CONNECTION_MESSAGE.test(err.message);
}

/**
 * The shared store: one table on a PostgreSQL server that every agent worker
 * of a deployment reaches (`AIRLOCK_CONTENT_DB`). Open it with `open`, which
 * connects and creates the table if it is missing, so a wrong setting stops
 * the worker at start-up.
 */
export class PostgresContentStore implements ContentStore {
  private closed = false;

  private constructor(
    private readonly pool: Pool,
    /** The URL as it may be shown. */
    private readonly target: string,
    private readonly password: string,
  ) {}

  static async open(url: string, options: PostgresContentStoreOptions = {}): Promise<PostgresContentStore> {
    const target = redactUrl(url);
    let password = '';
    let pool: Pool;
    try {
      password = decodeURIComponent(new URL(url).password);
      pool = new Pool({
        connectionString: url,
        max: options.maxConnections ?? 4,
        connectionTimeoutMillis: options.connectTimeoutMs ?? 10_000,
        idleTimeoutMillis: 30_000,
        // An idle pool does not keep a finished process alive.
        allowExitOnIdle: true,
        application_name: 'airlock-agent',
      });
    } catch (err) {
      throw new ContentStoreConnectionError(target, SETTING, `not a usable PostgreSQL URL (${err instanceof Error ? err.message : String(err)})`, err);
    }
    // A connection that breaks while idle is dropped by the pool and replaced on next use;
    // without a listener the pool's 'error' event would end the process.
    pool.on('error', () => undefined);
    const store = new PostgresContentStore(pool, target, password);
    try {
      await store.createTable();
    } catch (err) {
      await pool.end().catch(() => undefined);
      if (err instanceof ContentStoreConnectionError) throw err;
      throw new ContentStoreConnectionError(target, SETTING, `cannot create table airlock_contents (${store.detail(err)})`, err);
    }
    return store;
  }

  async put(text: string): Promise<string> {
    const digest = digestOf(text);
    await this.query({
      name: 'airlock-contents-put',
      text: 'INSERT INTO airlock_contents (digest, text) VALUES ($1, $2) ON CONFLICT (digest) DO NOTHING',
      values: [digest, text],
    });
    return digest;
  }

  async get(digest: string): Promise<string | undefined> {
    const result = await this.query<{ text: unknown }>({
      name: 'airlock-contents-get',
      text: 'SELECT text FROM airlock_contents WHERE digest = $1',
      values: [digest],
    });
    const text = result.rows[0]?.text;
    return typeof text === 'string' ? text : undefined;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.pool.end();
  }

  private async createTable(): Promise<void> {
    const client = await this.pool.connect().catch((err: unknown) => {
      throw this.wrap(err);
    });
    let failure: Error | undefined;
    try {
      await client.query('BEGIN');
      // Workers starting together would race inside CREATE TABLE IF NOT EXISTS
      // (duplicate type or table errors): they take turns on an advisory lock.
      await client.query("SELECT pg_advisory_xact_lock(hashtext('airlock_contents'))");
      await client.query(CREATE_TABLE);
      await client.query('COMMIT');
    } catch (err) {
      failure = err instanceof Error ? err : new Error(String(err));
      throw this.wrap(err);
    } finally {
      // A connection that failed is closed rather than reused.
      client.release(failure);
    }
  }

  private async query<R extends QueryResultRow>(config: QueryConfig) {
    try {
      return await this.pool.query<R>(config);
    } catch (err) {
      throw this.wrap(err);
    }
  }

  /** A connection problem as the error an operator acts on; anything else as it is. */
  private wrap(err: unknown): unknown {
    return isConnectionProblem(err) ? new ContentStoreConnectionError(this.target, SETTING, this.detail(err), err) : err;
  }

  /** An error's words without the password (PostgreSQL does not echo it; this makes sure). */
  private detail(err: unknown): string {
    const message = err instanceof Error && err.message !== '' ? err.message : (errorCode(err) ?? String(err));
    return this.password.length >= 4 ? message.split(this.password).join('***') : message;
  }
}
