import { randomUUID } from 'node:crypto';
import { AirlockError } from '../../../core/util/errors';
import type { Database, Queryable } from './postgres';

/**
 * The shared database's schema, as numbered migrations applied in order by
 * `airlock setup`, each once, in one transaction. A migration is never
 * edited once released: a change is a new one at the end.
 */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly apply: (q: Queryable) => Promise<void>;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'conversation contents and the nonce/outcome store',
    apply: async (q) => {
      // Kept as deployments of AIRLOCK_CONTENT_DB created it, so their contents stay.
      await q.query(`CREATE TABLE IF NOT EXISTS airlock_contents (
        digest text PRIMARY KEY,
        text text NOT NULL,
        stored_at timestamptz NOT NULL DEFAULT now()
      )`);
      await q.query(`CREATE TABLE airlock_store_meta (key text PRIMARY KEY, value text NOT NULL)`);
      await q.query({ text: `INSERT INTO airlock_store_meta (key, value) VALUES ('nonce_store_id', $1), ('nonce_store_created_at', $2)`, values: [randomUUID(), new Date().toISOString()] });
      await q.query(`CREATE TABLE airlock_nonces (
        nonce text PRIMARY KEY,
        job_id text NOT NULL,
        call_id text NOT NULL,
        fingerprint text NOT NULL,
        consumed_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        store_id text NOT NULL,
        before_state text,
        alive_at bigint,
        outcome text
      )`);
      await q.query(`CREATE INDEX airlock_nonces_consumed_at ON airlock_nonces (consumed_at)`);
    },
  },
  {
    version: 2,
    name: 'the audit log',
    apply: async (q) => {
      await q.query(`CREATE TABLE airlock_audit (
        seq bigserial PRIMARY KEY,
        event_id text NOT NULL UNIQUE,
        job_id text NOT NULL,
        run_id text,
        type text NOT NULL,
        at text NOT NULL,
        event text NOT NULL,
        written_at timestamptz NOT NULL DEFAULT now()
      )`);
      await q.query(`CREATE INDEX airlock_audit_job ON airlock_audit (job_id, seq)`);
      await q.query(`CREATE INDEX airlock_audit_type ON airlock_audit (type, seq)`);
      await q.query(`CREATE INDEX airlock_audit_written_at ON airlock_audit (written_at)`);
    },
  },
  {
    version: 3,
    name: 'the notification outbox',
    apply: async (q) => {
      // Times are milliseconds of the database server's clock.
      await q.query(`CREATE TABLE airlock_deliveries (
        event_id text NOT NULL,
        endpoint_id text NOT NULL,
        notice text NOT NULL,
        state text NOT NULL DEFAULT 'pending',
        attempts integer NOT NULL DEFAULT 0,
        next_at bigint NOT NULL,
        lease_until bigint NOT NULL DEFAULT 0,
        last_error text,
        created_at bigint NOT NULL,
        done_at bigint,
        PRIMARY KEY (event_id, endpoint_id)
      )`);
      await q.query(`CREATE INDEX airlock_deliveries_due ON airlock_deliveries (state, endpoint_id, next_at)`);
    },
  },
  {
    version: 4,
    name: 'passkey invites and registration challenges',
    apply: async (q) => {
      // Times are milliseconds of the database server's clock; only a token's hash is stored.
      await q.query(`CREATE TABLE airlock_invites (
        token_hash text PRIMARY KEY,
        reviewer text NOT NULL,
        created_at timestamptz NOT NULL,
        expires_at bigint NOT NULL,
        taken_until bigint NOT NULL DEFAULT 0
      )`);
      await q.query(`CREATE TABLE airlock_registration_challenges (key text PRIMARY KEY, challenge text NOT NULL, until bigint NOT NULL)`);
    },
  },
  {
    version: 5,
    name: 'which job stored which conversation text, for retention',
    apply: async (q) => {
      await q.query(`CREATE TABLE airlock_content_refs (
        digest text NOT NULL,
        job_id text NOT NULL,
        used_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (digest, job_id)
      )`);
      await q.query(`CREATE INDEX airlock_content_refs_job ON airlock_content_refs (job_id, used_at)`);
    },
  },
  {
    version: 6,
    name: 'passkey signature counters',
    apply: async (q) => {
      await q.query(`CREATE TABLE airlock_passkey_counters (
        credential_id text PRIMARY KEY,
        counter bigint NOT NULL,
        assertion text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT now()
      )`);
    },
  },
  {
    version: 7,
    name: 'bearer tokens of MCP agents',
    apply: async (q) => {
      // Only a token's hash is stored; one active token per agent.
      await q.query(`CREATE TABLE airlock_agent_tokens (
        token_hash text PRIMARY KEY,
        agent text NOT NULL,
        created_at timestamptz NOT NULL,
        revoked_at timestamptz,
        last_used_at timestamptz
      )`);
      await q.query(`CREATE UNIQUE INDEX airlock_agent_tokens_active ON airlock_agent_tokens (agent) WHERE revoked_at IS NULL`);
    },
  },
  {
    version: 8,
    name: 'undo records of reversible changes',
    apply: async (q) => {
      // `record` is the whole record as JSON (the changed path only as its digest); the other columns copy its fields to find and order by. expires_at is ms.
      await q.query(`CREATE TABLE airlock_undo (
        nonce text PRIMARY KEY,
        job_id text NOT NULL,
        state text NOT NULL,
        held_at timestamptz NOT NULL,
        expires_at bigint NOT NULL,
        record text NOT NULL
      )`);
      await q.query(`CREATE INDEX airlock_undo_job ON airlock_undo (job_id, held_at)`);
      await q.query(`CREATE INDEX airlock_undo_expiry ON airlock_undo (state, expires_at)`);
    },
  },
  {
    version: 9,
    name: 'standing approvals and their uses',
    apply: async (q) => {
      // `record` is the whole signed record as JSON; times are ms. A use is one row, numbered, once per job and request.
      await q.query(`CREATE TABLE airlock_standing_approvals (
        id text PRIMARY KEY,
        tool_name text NOT NULL,
        requester text NOT NULL,
        created_at bigint NOT NULL,
        until_ms bigint NOT NULL,
        uses integer NOT NULL,
        record text NOT NULL,
        revoked_at bigint,
        revoked_by text,
        revoked_reason text
      )`);
      await q.query(`CREATE INDEX airlock_standing_match ON airlock_standing_approvals (tool_name, requester)`);
      await q.query(`CREATE TABLE airlock_standing_uses (
        standing_id text NOT NULL REFERENCES airlock_standing_approvals (id),
        use_key text NOT NULL,
        n integer NOT NULL,
        used_at bigint NOT NULL,
        PRIMARY KEY (standing_id, use_key),
        UNIQUE (standing_id, n),
        UNIQUE (use_key)
      )`);
    },
  },
];

/** The schema version this build reads and writes. */
export const SCHEMA_VERSION = MIGRATIONS[MIGRATIONS.length - 1]?.version ?? 0;

const CREATE_VERSIONS = `CREATE TABLE IF NOT EXISTS airlock_schema_migrations (
  version integer PRIMARY KEY,
  name text NOT NULL,
  applied_at timestamptz NOT NULL DEFAULT now()
)`;

/** The database's schema is not the one this build knows; a worker stops at start with this line. */
export class SchemaMismatch extends AirlockError {
  override name = 'SchemaMismatch';
  constructor(
    readonly found: number,
    readonly needed: number,
    message: string,
  ) {
    super(message);
  }
}

async function currentVersion(q: Queryable): Promise<number> {
  const table = await q.query<{ present: boolean }>(`SELECT to_regclass('airlock_schema_migrations') IS NOT NULL AS present`);
  if (table.rows[0]?.present !== true) return 0;
  const row = await q.query<{ version: number | null }>(`SELECT max(version) AS version FROM airlock_schema_migrations`);
  return row.rows[0]?.version ?? 0;
}

export interface MigrateResult {
  readonly from: number;
  readonly to: number;
  readonly applied: readonly Migration[];
}

/**
 * Brings the schema to `SCHEMA_VERSION`. Safe to run from several processes
 * at once: they take turns on an advisory lock, and each applies only what
 * is not there yet. A database newer than this build is left alone.
 */
export async function migrate(db: Database): Promise<MigrateResult> {
  return db.transaction(async (q) => {
    await q.query(`SELECT pg_advisory_xact_lock(hashtext('airlock_schema_migrations'))`);
    await q.query(CREATE_VERSIONS);
    const from = await currentVersion(q);
    if (from > SCHEMA_VERSION) throw tooNew(db, from);
    const applied = MIGRATIONS.filter((m) => m.version > from);
    for (const m of applied) {
      await m.apply(q);
      await q.query({ text: `INSERT INTO airlock_schema_migrations (version, name) VALUES ($1, $2)`, values: [m.version, m.name] });
    }
    return { from, to: SCHEMA_VERSION, applied };
  });
}

function tooNew(db: Database, found: number): SchemaMismatch {
  return new SchemaMismatch(
    found,
    SCHEMA_VERSION,
    `the database ${db.target} has schema version ${found}, newer than this build of airlock knows (${SCHEMA_VERSION}): upgrade airlock on this machine`,
  );
}

/** Refuses a database whose schema is not this build's, naming both versions and what to run. */
export async function requireSchema(db: Database): Promise<void> {
  const found = await currentVersion(db);
  if (found === SCHEMA_VERSION) return;
  if (found > SCHEMA_VERSION) throw tooNew(db, found);
  throw new SchemaMismatch(
    found,
    SCHEMA_VERSION,
    `the database ${db.target} has schema version ${found}; this build of airlock needs version ${SCHEMA_VERSION}: run \`airlock setup\` with ${db.setting} set to migrate it`,
  );
}
