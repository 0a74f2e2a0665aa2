import { workflowInfo } from '@temporalio/workflow';
import { sanitizeAuditEvent, type AuditEvent, type AuditRecord } from '../core/audit/events';
import { AuditBacklog, auditWriteResultSchema, type AuditHealth, type CarriedAuditBacklog } from '../core/audit/backlog';
import { describeError } from '../core/temporal/describe-error';
import { local } from './activities';

/**
 * The job's audit events, buffered in workflow state until an agent
 * activity writes them: carried by the next policy or grant activity, or
 * flushed on their own where the job waits or ends. Audit never breaks a
 * job: events whose write failed are kept (bounded, see `AuditBacklog`)
 * and sent again with the next write.
 */
export class AuditBuffer {
  /** Recorded, not yet handed to a write. */
  private events: AuditEvent[] = [];
  /** Events this run recorded so far: with the run's id, each event's identity (replay counts the same). */
  private recorded = 0;
  private backlog = new AuditBacklog();

  constructor(
    private readonly jobId: string,
    private readonly policyVersion: () => string | undefined,
  ) {}

  /** Events and counts carried from the previous run. */
  restore(carried: CarriedAuditBacklog | undefined): void {
    this.backlog = AuditBacklog.restore(carried);
  }

  record(event: AuditRecord): void {
    const eventId = `${workflowInfo().runId}:${this.recorded++}`;
    this.events.push({ ...event, jobId: this.jobId, at: new Date().toISOString(), policyVersion: this.policyVersion(), eventId });
  }

  /** Events no write has taken yet, sanitized as a write would: what a job that ends now could not write. */
  lost(): AuditEvent[] {
    return [...this.backlog.kept(), ...this.events].map(sanitizeAuditEvent);
  }

  /** Events recorded and not yet tried: the job has something to write. */
  get fresh(): number {
    return this.events.length;
  }

  /** Events whose write failed, waiting for a retry. */
  get unwritten(): number {
    return this.backlog.size;
  }

  /** Hands the buffered events (kept ones first) to the next agent activity, which writes them first. */
  carry(): AuditEvent[] | undefined {
    if (this.events.length === 0 && this.backlog.size === 0) return undefined;
    return this.take();
  }

  /**
   * What the activity that carried `events` reported (the `audit` of its
   * result). No report counts as written, as does an activity that failed
   * after carrying them: it writes them first.
   */
  settle(events: readonly AuditEvent[] | undefined, result: unknown): void {
    if (events === undefined) return;
    const parsed = auditWriteResultSchema.safeParse(result);
    if (parsed.success && parsed.data.error !== undefined) this.backlog.failed(events, parsed.data.error, Date.now());
    else this.backlog.succeeded();
  }

  /**
   * Writes what is buffered. Kept events alone are retried only once their
   * backoff is over, unless `force` (the job is about to end or continue).
   */
  async flush(force = false): Promise<void> {
    const handedOver = Date.now();
    if (this.events.length === 0 && !(force ? this.backlog.size > 0 : this.backlog.due(handedOver))) return;
    const events = this.take();
    // Timed from the hand-over: the time after a local activity may differ between a run and its replay.
    try {
      const result = await local.recordAudit({ events });
      if (result.error !== undefined) this.backlog.failed(events, result.error, handedOver);
      else this.backlog.succeeded();
    } catch (err) {
      // The activity reports sink errors as results; this covers its own timeouts.
      this.backlog.failed(events, describeError(err), handedOver);
    }
  }

  /** Milliseconds from `now` until kept events are due to be written again. */
  retryIn(now = Date.now()): number | undefined {
    return this.backlog.retryIn(now);
  }

  health(): AuditHealth | undefined {
    return this.backlog.health();
  }

  carried(): CarriedAuditBacklog | undefined {
    return this.backlog.carried();
  }

  private take(): AuditEvent[] {
    const events = [...this.backlog.take(), ...this.events];
    this.events = [];
    return events;
  }
}
