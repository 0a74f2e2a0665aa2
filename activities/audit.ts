import { Context } from '@temporalio/activity';
import { sanitizeAuditEvent, type AuditEvent } from '../core/audit/events';
import { describeError } from '../core/temporal/describe-error';
import type { AuditSink } from '../host/stores/audit-log/store';
import type { AuditNotifier } from '../host/notifier';
import { noMetrics, type AirlockMetrics } from './metrics';

export interface RecordAuditInput {
  readonly events: readonly AuditEvent[];
}

export interface RecordAuditResult {
  readonly written: number;
  /** Set when the sink failed (nothing of the batch was written): audit writing never breaks a job. */
  readonly error?: string;
}

/** Where an agent activity writes the job's events, and counts them. */
export interface AuditDeps {
  readonly audit: AuditSink;
  /** Default: counts nothing. */
  readonly metrics?: AirlockMetrics;
  /** Told about every event once it is written (notifications); default: none. */
  readonly notifier?: AuditNotifier;
}

/**
 * Writes a job's buffered events, sanitized. A failed write is a result,
 * never an exception: the job keeps the events and sends them again. A
 * store keyed by event id (the shared database) is written by every
 * attempt, and holds each event once; onto the JSONL file only a first
 * attempt writes: a retry may follow an attempt that wrote them, so it
 * reports nothing to redo (at most once, never twice) — unless
 * `everyAttempt`: a caller that writes only after every point where its
 * attempt can fail (the model turn) writes on retries too. Metrics count
 * events once written: events the job sends again after a failed write are
 * counted once. Written events are handed to the notifier, which only
 * records what it owes (it never waits on an endpoint).
 */
export async function writeAudit(deps: AuditDeps, events: readonly AuditEvent[] | undefined, options: { everyAttempt?: boolean } = {}): Promise<RecordAuditResult> {
  const { info } = Context.current();
  if (events === undefined || events.length === 0 || (info.attempt > 1 && !deps.audit.idempotent && options.everyAttempt !== true)) return { written: 0 };
  const metrics = deps.metrics ?? noMetrics;
  // Stamped here, from the activity's own context: the job's events do not carry it, and its code need not change.
  const runId = info.workflowExecution?.runId;
  try {
    const sanitized = events.map((event) => ({ ...sanitizeAuditEvent(event), ...(runId !== undefined ? { runId } : {}) }));
    await deps.audit.write(sanitized);
    metrics.audited(events);
    await deps.notifier?.enqueue(sanitized);
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
