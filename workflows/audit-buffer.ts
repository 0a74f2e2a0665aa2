import type { AuditEvent, AuditRecord } from '../core/audit';
import { local } from './activities';
import { oneEvaluationPath } from './patches';

/**
 * The job's audit events, buffered in workflow state until an agent
 * activity writes them: carried by the next policy or grant activity, or
 * flushed on their own where the job waits or ends. Audit never breaks a
 * job: a failed write is dropped, not retried forever.
 */
export class AuditBuffer {
  private events: AuditEvent[] = [];

  constructor(
    private readonly jobId: string,
    private readonly policyVersion: () => string | undefined,
  ) {}

  record(event: AuditRecord): void {
    this.events.push({ ...event, jobId: this.jobId, at: new Date().toISOString(), policyVersion: this.policyVersion() });
  }

  get size(): number {
    return this.events.length;
  }

  /** Hands the buffered events to the next agent activity, which writes them first. */
  carry(): AuditEvent[] | undefined {
    if (this.events.length === 0 || !oneEvaluationPath()) return undefined;
    return this.take();
  }

  async flush(): Promise<void> {
    if (this.events.length === 0) return;
    const events = this.take();
    try {
      await local.recordAudit({ events });
    } catch {
      // The activity already swallows sink errors; this only covers its own timeouts.
    }
  }

  private take(): AuditEvent[] {
    const events = this.events;
    this.events = [];
    return events;
  }
}
