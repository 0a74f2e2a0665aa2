import { z } from 'zod';
import { auditEventSchema } from '../../core/audit/backlog';
import { auditEventIds, sanitizeAuditEvent, type AuditEvent } from '../../core/audit/events';
import type { AirlockConfig } from '../../core/config/config';
import { AGENT_JOB_WORKFLOW } from '../../core/job/job-input';
import { display } from '../../core/redaction/display-text';
import { parseDuration } from '../../core/util/duration';
import { type AuditSink } from '../../host/stores/audit-log/store';
import { JsonlAuditSink } from '../../host/stores/audit-log/jsonl';
import { JsonlAuditReader } from '../../host/stores/audit-log/reader';
import { statePaths } from '../../host/config/paths';
import { printJson, stringOption, type CommandIo, type ParsedArgs } from '../command';
import { UsageError } from '../../client/errors';
import { withClient } from '../with-client';

/** What an ended job's result says of the events it could not write; each is checked against its type below. */
const resultSchema = z.looseObject({ audit: z.looseObject({ events: z.array(z.unknown()).optional() }).optional() });

interface Recovered {
  readonly jobId: string;
  readonly runId: string;
  /** Events the result carried, each now in the log once. */
  readonly events: number;
}

/** The audit log to write to, and the ids of one job's events it already holds (the database keeps each id once by itself). */
async function openLog(config: AirlockConfig): Promise<{ sink: AuditSink; holds(jobId: string): Promise<Set<string>>; close(): Promise<void> }> {
  if (config.database === undefined) {
    const file = statePaths(config).audit;
    const reader = new JsonlAuditReader(file);
    return {
      sink: new JsonlAuditSink(file),
      holds: async (jobId) => new Set((await reader.read({ jobId, limit: 100_000 })).events.flatMap((e) => (typeof e.eventId === 'string' ? [e.eventId] : []))),
      close: async () => undefined,
    };
  }
  const { openCheckedDatabase } = await import('../../host/stores/database/open');
  const { PostgresAuditLog } = await import('../../host/stores/audit-log/postgres');
  const db = await openCheckedDatabase(config.database, { applicationName: 'airlock-audit', maxConnections: 1 });
  return { sink: new PostgresAuditLog(db), holds: async () => new Set(), close: () => db.close() };
}

/**
 * `airlock audit --recover`: the events of jobs that ended while the audit
 * log could not be written (a full disk, say) are carried in their results;
 * this writes them to the log now, stamped with the run that recorded
 * them, once: the database keeps each event id once, and events the JSONL
 * file already holds are left out.
 */
export async function recoverAudit(args: ParsedArgs, io: CommandIo): Promise<void> {
  const sinceText = stringOption(args, 'since') ?? '30d';
  const since = parseDuration(sinceText);
  if (since === undefined) throw new UsageError(`--since takes a duration such as 7d or 12h, got ${JSON.stringify(sinceText)}`);
  const config = io.config();
  const recovered: Recovered[] = [];
  const log = await openLog(config);
  try {
    await withClient(io, async (client) => {
      const after = new Date(Date.now() - since).toISOString();
      const query = `WorkflowType = "${AGENT_JOB_WORKFLOW}" AND ExecutionStatus != "Running" AND CloseTime > "${after}"`;
      for await (const info of client.client.workflow.list({ query })) {
        let raw: unknown;
        try {
          raw = await client.client.workflow.getHandle(info.workflowId, info.runId).result();
        } catch {
          // Failed, cancelled or terminated: such a run returned no result to carry events in.
          continue;
        }
        const carried = resultSchema.safeParse(raw).data?.audit?.events ?? [];
        // Only events of a known type with their type's fields, sanitized again as a write would: a result is only data.
        const events = carried.flatMap((e) => {
          const parsed = auditEventSchema.safeParse(e);
          return parsed.success ? [sanitizeAuditEvent(parsed.data)] : [];
        });
        if (events.length === 0) continue;
        // Stamped as the writing activity would have: with the run that recorded them.
        const stamped: AuditEvent[] = events.map((e) => ({ ...e, runId: e.runId ?? info.runId }));
        const held = await log.holds(info.workflowId);
        const ids = auditEventIds(stamped);
        const missing = stamped.filter((_, i) => !held.has(ids[i] ?? ''));
        if (missing.length > 0) await log.sink.write(missing);
        recovered.push({ jobId: info.workflowId, runId: info.runId, events: events.length });
      }
    });
  } finally {
    await log.close();
  }
  if (args.values.json === true) {
    printJson(io, recovered);
    return;
  }
  if (recovered.length === 0) io.out(display`no job that ended within ${sinceText} carries audit events it could not write`);
  for (const r of recovered) io.out(display`job ${r.jobId} (run ${r.runId}): ${String(r.events)} event(s) it could not write are in the audit log now`);
}
