import { Context } from '@temporalio/activity';
import { sanitizeAuditEvent, type AuditEvent } from '../core/audit';
import { describeError } from '../core/describe-error';
import type { AuditSink } from '../host/audit-log';
import { noMetrics, type AirlockMetrics } from './metrics';

export interface RecordAuditInput {
  readonly events: readonly AuditEvent[];
}

export interface RecordAuditResult {
  readonly written: number;
  /** Set when the sink failed: audit writing never breaks a job. */
  readonly error?: string;
}

/** Where an agent activity writes the job's events, and counts them. */
export interface AuditDeps {
  readonly audit: AuditSink;
  /** Default: counts nothing. */
  readonly metrics?: AirlockMetrics;
}

/**
 * Writes a job's buffered events, sanitized. Only a first attempt writes:
 * a retried activity must not log the same events twice. The metrics count
 * the same events at the same place, so they agree with the log even when
 * the write itself fails.
 */
export function writeAudit(deps: AuditDeps, events: readonly AuditEvent[] | undefined): RecordAuditResult {
  if (events === undefined || events.length === 0 || Context.current().info.attempt > 1) return { written: 0 };
  const metrics = deps.metrics ?? noMetrics;
  metrics.audited(events);
  try {
    const sanitized = events.map(sanitizeAuditEvent);
    deps.audit.write(sanitized);
    return { written: sanitized.length };
  } catch (err) {
    metrics.auditWriteFailed();
    return { written: 0, error: describeError(err) };
  }
}

export function createAuditActivities(deps: AuditDeps) {
  return {
    async recordAudit(input: RecordAuditInput): Promise<RecordAuditResult> {
      return writeAudit(deps, input.events);
    },
  };
}
