import { z } from 'zod';
import { auditEventSchemas, type AuditEvent } from './events';

/**
 * Audit events a job could not get written yet, kept (bounded) until a
 * write succeeds. Pure: the workflow's audit buffer holds one, and it is
 * carried across continue-as-new.
 */

/** The newest events are kept; older ones beyond either bound are counted as dropped. */
export const MAX_UNWRITTEN_EVENTS = 1000;
export const MAX_UNWRITTEN_CHARS = 256_000;

/** Waits between retries of a failed write while a job has nothing else to write: 30 s doubling to an hour. */
const FIRST_RETRY_MS = 30_000;
const MAX_RETRY_MS = 3_600_000;

const envelopeSchema = z.strictObject({ type: z.string(), jobId: z.string(), at: z.string(), policyVersion: z.string().optional(), eventId: z.string().max(200).optional(), data: z.unknown() });
const dataSchemas: ReadonlyMap<string, z.ZodType> = new Map(Object.entries(auditEventSchemas));

/** An event as the job recorded it, checked against its type's definition. */
export const auditEventSchema = z.custom<AuditEvent>((raw) => {
  const envelope = envelopeSchema.safeParse(raw);
  return envelope.success && dataSchemas.get(envelope.data.type)?.safeParse(envelope.data.data).success === true;
});

/** Carried across continue-as-new (optional there: older state has none). */
export const auditBacklogSchema = z.strictObject({
  /** Checked one by one on restore: an event that does not parse is counted as dropped, the job goes on. */
  events: z.array(z.unknown()),
  dropped: z.number().int().min(0),
  failures: z.number().int().min(0),
  lastError: z.string().optional(),
});
export type CarriedAuditBacklog = z.infer<typeof auditBacklogSchema>;

/** What the job's view, `show` and the result say about audit writing; absent while every write succeeded. */
export interface AuditHealth {
  /** Events waiting to be written (in the result: lost, the job ended before a write succeeded). */
  readonly unwritten: number;
  /** Events given up on: beyond the bounds, or unreadable carried state. */
  readonly dropped: number;
  /** Writes that failed in this job (across continue-as-new). */
  readonly failures: number;
  readonly lastError: string | null;
}

/** What `recordAudit` (and activities that carry audit events) report; results recorded before had no error field. */
export const auditWriteResultSchema = z.object({ written: z.number().optional(), error: z.string().optional() });

export class AuditBacklog {
  private events: AuditEvent[] = [];
  private dropped = 0;
  private failures = 0;
  private consecutive = 0;
  private lastError: string | undefined;
  private retryAt = 0;

  static restore(carried: CarriedAuditBacklog | undefined): AuditBacklog {
    const backlog = new AuditBacklog();
    if (carried === undefined) return backlog;
    backlog.failures = carried.failures;
    backlog.dropped = carried.dropped;
    backlog.lastError = carried.lastError;
    const events = carried.events.flatMap((raw) => {
      const parsed = auditEventSchema.safeParse(raw);
      return parsed.success ? [parsed.data] : [];
    });
    backlog.dropped += carried.events.length - events.length;
    backlog.keep(events);
    return backlog;
  }

  get size(): number {
    return this.events.length;
  }

  /** The kept events, left in place. */
  kept(): readonly AuditEvent[] {
    return [...this.events];
  }

  /** Takes every kept event for a write; `failed` puts them back. */
  take(): AuditEvent[] {
    const events = this.events;
    this.events = [];
    return events;
  }

  /** A write of these events (older first) failed: keep them, newest first within the bounds. */
  failed(events: readonly AuditEvent[], error: string, now: number): void {
    this.failures++;
    this.consecutive++;
    this.lastError = error;
    this.retryAt = now + Math.min(FIRST_RETRY_MS * 2 ** Math.min(this.consecutive - 1, 20), MAX_RETRY_MS);
    this.keep([...events, ...this.events]);
  }

  succeeded(): void {
    this.consecutive = 0;
  }

  /** Whether a write attempted only for kept events is due (a write with new events always retries them). */
  due(now: number): boolean {
    return this.events.length > 0 && now >= this.retryAt;
  }

  /** Milliseconds until the next retry, when events are kept. */
  retryIn(now: number): number | undefined {
    return this.events.length === 0 ? undefined : Math.max(1, this.retryAt - now);
  }

  health(): AuditHealth | undefined {
    if (this.failures === 0 && this.dropped === 0) return undefined;
    return { unwritten: this.events.length, dropped: this.dropped, failures: this.failures, lastError: this.lastError ?? null };
  }

  carried(): CarriedAuditBacklog | undefined {
    if (this.failures === 0 && this.dropped === 0 && this.events.length === 0) return undefined;
    return {
      events: [...this.events],
      dropped: this.dropped,
      failures: this.failures,
      ...(this.lastError !== undefined ? { lastError: this.lastError } : {}),
    };
  }

  private keep(events: readonly AuditEvent[]): void {
    const sizes = events.map((e) => JSON.stringify(e).length);
    let start = Math.max(0, events.length - MAX_UNWRITTEN_EVENTS);
    let total = sizes.slice(start).reduce((a, b) => a + b, 0);
    while (start < events.length && total > MAX_UNWRITTEN_CHARS) total -= sizes[start++] ?? 0;
    this.dropped += start;
    this.events = events.slice(start);
  }
}
