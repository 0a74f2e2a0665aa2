import { z } from 'zod';
import { auditEventTypes } from '../../core/audit/events';
import type { AirlockConfig } from '../../core/config/config';
import { auditTable } from '../../core/audit/audit-table';
import { display, displayText } from '../../core/redaction/display-text';
import { JsonlAuditReader, type AuditFilter, type AuditRead } from '../../host/stores/audit-log/reader';
import { statePaths } from '../../host/config/paths';
import { printJson, stringOption, type CommandRun } from '../command';
import { UsageError } from '../../client/errors';

const limitSchema = z.coerce.number().int().min(1).max(100_000);

/** The shared database's audit table when one is configured, else this machine's JSONL log. */
async function readAudit(config: AirlockConfig, filter: AuditFilter): Promise<AuditRead> {
  if (config.database === undefined) return new JsonlAuditReader(statePaths(config).audit).read(filter);
  // Loaded only when a database is configured.
  const { openCheckedDatabase } = await import('../../host/stores/database/open');
  const { PostgresAuditLog } = await import('../../host/stores/audit-log/postgres');
  const db = await openCheckedDatabase(config.database, { applicationName: 'airlock-audit', maxConnections: 1 });
  try {
    return await new PostgresAuditLog(db).read(filter);
  } finally {
    await db.close();
  }
}

export const run: CommandRun = async (args, io) => {
  if (args.values.recover === true) {
    if (['job', 'run', 'type', 'limit'].some((o) => args.values[o] !== undefined)) throw new UsageError('--recover takes only --since and --json');
    return (await import('./audit-recover')).recoverAudit(args, io);
  }
  if (args.values.since !== undefined) throw new UsageError('--since goes with --recover');
  const type = stringOption(args, 'type');
  if (type !== undefined && !(auditEventTypes as readonly string[]).includes(type)) {
    throw new UsageError(`--type takes one of ${auditEventTypes.join(', ')}`);
  }
  const limit = limitSchema.safeParse(stringOption(args, 'limit') ?? '100');
  if (!limit.success) throw new UsageError('--limit takes a whole number between 1 and 100000');
  const job = stringOption(args, 'job');
  const runId = stringOption(args, 'run');
  if (runId !== undefined && runId.trim() === '') throw new UsageError('--run takes a run id (or the start of one), as `airlock audit --job JOB_ID` shows it');
  const { events, where, unreadable } = await readAudit(io.config(), {
    limit: limit.data,
    ...(job !== undefined ? { jobId: job } : {}),
    ...(runId !== undefined ? { runId } : {}),
    ...(type !== undefined ? { type } : {}),
  });
  if (unreadable.length > 0) {
    const shown = unreadable.slice(0, 10).join(', ');
    const more = unreadable.length > 10 ? `, and ${unreadable.length - 10} more` : '';
    io.err(display`airlock audit: ${unreadable.length} line(s) of ${where} are not audit events and were not shown: lines ${shown}${more}`);
  }
  if (args.values.json === true) {
    printJson(io, events);
    return;
  }
  if (events.length === 0) {
    const of = [job !== undefined ? ` for job ${job}` : '', runId !== undefined ? ` in run ${runId}` : ''].join('');
    io.out(display`no audit events${of} in ${where}`);
  }
  // A job id can have several runs (`run --id X --new-run`): each row says which one wrote it (--json has the whole ids).
  if (events.length > 0) for (const line of auditTable(events, displayText)) io.out(line);
  const runs = new Set(events.flatMap((e) => (e.runId !== undefined ? [e.runId] : [])));
  if (job !== undefined && runId === undefined && runs.size > 1) {
    io.err(display`airlock audit: job ${job} has events of ${runs.size} runs (${[...runs].join(', ')}); show one with --run RUN_ID`);
  }
};
