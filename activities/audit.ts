import { Context } from '@temporalio/activity';
import { sanitizeAuditEvent, type AuditEvent } from '../core/audit';
import { describeError } from '../core/describe-error';
import type { AuditSink } from '../host/audit-log';

export interface RecordAuditInput {
  readonly events: readonly AuditEvent[];
}

export interface RecordAuditResult {
  readonly written: number;
  /** Set when the sink failed (nothing of the batch was written): audit writing never breaks a job. */
  readonly error?: string;
}

/**
 * Writes a job's buffered events, sanitized. A failed write is a result,
 * never an exception: the job keeps the events and sends them again. Only
 * a first attempt writes: a retry may follow an attempt that wrote them,
 * so it reports nothing to redo (at most once, never twice).
 */
export function writeAudit(sink: AuditSink, events: readonly AuditEvent[] | undefined): RecordAuditResult {
  if (events === undefined || events.length === 0 || Context.current().info.attempt > 1) return { written: 0 };
  try {
    const sanitized = events.map(sanitizeAuditEvent);
    sink.write(sanitized);
    return { written: sanitized.length };
  } catch (err) {
    return { written: 0, error: describeError(err) };
  }
}

export function createAuditActivities(deps: { readonly audit: AuditSink }) {
  return {
    async recordAudit(input: RecordAuditInput): Promise<RecordAuditResult> {
      return writeAudit(deps.audit, input.events);
    },
  };
}
