import { Connection } from '@temporalio/client';
import type { DatabaseConfig } from '../../core/config/config';
import { display } from '../../core/redaction/display-text';
import { printJson, type CommandIo, type CommandRun } from '../command';
import { ensureSearchAttributes } from '../../ops/temporal/search-attributes';
import { statePaths } from '../../host/config/paths';
import { ensureCodecKeys } from '../../host/temporal/payload-codec';
import { temporalIsLocal } from '../../host/temporal/locality';
import { connectionOptionsOf, connectTo, temporalTarget } from '../../host/temporal/target';

interface DatabaseSetup {
  readonly target: string;
  readonly from: number;
  readonly to: number;
  readonly applied: ReadonlyArray<{ readonly version: number; readonly name: string }>;
}

/** Brings the shared database's schema to this build's version; safe to run again, and from two places at once. */
async function setupDatabase(settings: DatabaseConfig): Promise<DatabaseSetup> {
  // Loaded only when a database is configured.
  const { Database } = await import('../../host/stores/database/postgres');
  const { migrate } = await import('../../host/stores/database/migrations');
  const db = Database.open(settings.url, { setting: settings.setting, statementTimeoutMs: 0, maxConnections: 1, applicationName: 'airlock-setup' });
  try {
    const result = await migrate(db);
    return { target: db.target, from: result.from, to: result.to, applied: result.applied.map((m) => ({ version: m.version, name: m.name })) };
  } finally {
    await db.close();
  }
}

function databaseLine(io: CommandIo, d: DatabaseSetup): void {
  if (d.applied.length === 0) io.out(display`database ${d.target}: schema already at version ${String(d.to)}`);
  else io.out(display`database ${d.target}: schema version ${String(d.from)} -> ${String(d.to)} (${d.applied.map((m) => `${m.version}: ${m.name}`).join('; ')})`);
}

export const run: CommandRun = async (args, io) => {
  const config = io.config();
  const target = temporalTarget(config);
  const { address, namespace } = target;
  const connection = await connectTo(target, () => Connection.connect({ ...connectionOptionsOf(target), connectTimeout: 5000 }));
  let added: string[];
  try {
    added = await ensureSearchAttributes(connection, namespace);
  } finally {
    await connection.close();
  }
  const database = config.database === undefined ? undefined : await setupDatabase(config.database);
  // History on a server elsewhere is encrypted by default: the keys every machine then shares are made here, once.
  const wantKeys = args.values.codec === true || (config.codec.mode === 'auto' && !temporalIsLocal(address));
  const keysFile = statePaths(config).codecKeys;
  const codec = wantKeys ? { file: keysFile, created: ensureCodecKeys(keysFile).created } : undefined;
  if (args.values.json === true) {
    printJson(io, { namespace, added, ...(database !== undefined ? { database } : {}), ...(codec !== undefined ? { codecKeys: codec } : {}) });
    return;
  }
  io.out(added.length === 0 ? display`namespace ${namespace}: search attributes already registered` : display`namespace ${namespace}: registered ${added.join(', ')}`);
  if (database !== undefined) databaseLine(io, database);
  if (codec?.created === true) {
    io.out(display`payload encryption keys: created ${codec.file}; copy it to every machine running airlock (workers, CLI, approval page, codec server), mode 0600`);
  } else if (codec !== undefined) io.out(display`payload encryption keys: ${codec.file} already exists`);
};
