import { createReadStream, existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { z } from 'zod';

/**
 * Reading the audit log back, for `airlock audit`: the same events, filters
 * and order from the JSONL file of one agent worker and from the shared
 * database. Loads nothing of Temporal.
 */

/** What `airlock audit` asks for: the last `limit` events that match. */
export interface AuditFilter {
  readonly jobId?: string;
  /** A run id or the start of one. */
  readonly runId?: string;
  readonly type?: string;
  readonly limit: number;
}

/** An audit event as stored: its envelope checked, its data shown as written. */
export const storedEventSchema = z.looseObject({
  type: z.string(),
  jobId: z.string(),
  at: z.string(),
  /** Absent in events written before runs were recorded. */
  runId: z.string().optional(),
  data: z.record(z.string(), z.unknown()),
});
export type StoredEvent = z.infer<typeof storedEventSchema>;

export interface AuditRead {
  /** Oldest first. */
  readonly events: StoredEvent[];
  /** Where the log is, for messages (a file, or the database with its password hidden). */
  readonly where: string;
  /** Entries that are not audit events (a damaged log), by line number or row; said, never skipped quietly. */
  readonly unreadable: string[];
}

/** Reads the audit log: the JSONL file of one agent worker, or the shared database's table. */
export interface AuditReader {
  read(filter: AuditFilter): Promise<AuditRead>;
}

/** One stored event, or undefined when the text is not one. An event type or field this build does not know is still kept as it is. */
export function parseStoredEvent(text: string): StoredEvent | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return undefined;
  }
  const parsed = storedEventSchema.safeParse(raw);
  return parsed.success ? parsed.data : undefined;
}

export function matchesFilter(event: StoredEvent, filter: AuditFilter): boolean {
  const inRun = filter.runId === undefined || (event.runId !== undefined && event.runId.startsWith(filter.runId));
  return (filter.jobId === undefined || event.jobId === filter.jobId) && inRun && (filter.type === undefined || event.type === filter.type);
}

/** How many recent event ids the JSONL reader remembers to drop an event written twice. */
const RECENT_IDS = 100_000;

/** The JSONL log, read line by line: the last `limit` matching events, and the numbers of lines that are not events. */
export class JsonlAuditReader implements AuditReader {
  constructor(readonly file: string) {}

  async read(filter: AuditFilter): Promise<AuditRead> {
    const events: StoredEvent[] = [];
    const unreadable: string[] = [];
    // A workflow task redone after a worker crash writes its events again, under the ids the job gave them:
    // shown once, as the database keeps them. Such twins are seconds apart, so a window of recent ids finds them.
    const recent = new Set<string>();
    if (existsSync(this.file)) {
      let lineNumber = 0;
      for await (const line of createInterface({ input: createReadStream(this.file, 'utf8'), crlfDelay: Infinity })) {
        lineNumber++;
        if (line.trim() === '') continue;
        const event = parseStoredEvent(line);
        if (event === undefined) {
          unreadable.push(String(lineNumber));
          continue;
        }
        if (typeof event.eventId === 'string') {
          if (recent.has(event.eventId)) continue;
          recent.add(event.eventId);
          if (recent.size > RECENT_IDS) recent.delete(recent.values().next().value as string);
        }
        if (matchesFilter(event, filter)) {
          events.push(event);
          if (events.length > filter.limit) events.shift();
        }
      }
    }
    return { events, where: this.file, unreadable };
  }
}
