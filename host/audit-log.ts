import { appendFileSync, mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { AuditEvent } from '../core/audit';

/** Where sanitized audit events go. Implementations must not throw for a bad event. */
export interface AuditSink {
  write(events: readonly AuditEvent[]): void;
}

/** Append-only JSON lines, one event per line. */
export class JsonlAuditSink implements AuditSink {
  constructor(readonly file: string) {
    mkdirSync(dirname(file), { recursive: true, mode: 0o700 });
  }

  write(events: readonly AuditEvent[]): void {
    if (events.length === 0) return;
    appendFileSync(this.file, events.map((e) => `${JSON.stringify(e)}\n`).join(''), { mode: 0o600 });
  }
}
