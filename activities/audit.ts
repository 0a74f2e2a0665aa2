import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { sanitizeAuditEvent, type AuditEvent } from '../core/audit';

/** Where sanitized audit events go. Implementations must not throw for a bad event. */
export interface AuditSink {
  write(events: readonly AuditEvent[]): void;
}

/** Append-only JSON lines, one event per line. */
export class JsonlAuditSink implements AuditSink {
  constructor(readonly file: string) {
    mkdirSync(dirname(file), { recursive: true });
  }

  write(events: readonly AuditEvent[]): void {
    if (events.length === 0) return;
    appendFileSync(this.file, events.map((e) => `${JSON.stringify(e)}\n`).join(''), { mode: 0o600 });
  }
}

export interface RecordAuditInput {
  readonly events: readonly AuditEvent[];
}

export interface RecordAuditResult {
  readonly written: number;
  /** Set when the sink failed: audit writing never breaks a job. */
  readonly error?: string;
}

export function createAuditActivities(deps: { readonly audit: AuditSink }) {
  return {
    async recordAudit(input: RecordAuditInput): Promise<RecordAuditResult> {
      try {
        const events = input.events.map(sanitizeAuditEvent);
        deps.audit.write(events);
        return { written: events.length };
      } catch (err) {
        return { written: 0, error: err instanceof Error ? err.message : String(err) };
      }
    },
  };
}
