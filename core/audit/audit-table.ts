import { auditEventSchemas, type AuditEvent } from './events';

/**
 * `airlock audit` as a table: one row per event (time, run, job, event,
 * tool, target, who, outcome), the way a person scans a log. `--json`
 * keeps the raw events; the whole approval card stays there.
 */

/** An event as a store hands it back: its data checked against its type only here. */
export interface StoredAuditEvent {
  readonly type: string;
  readonly jobId: string;
  readonly at: string;
  readonly runId?: string;
  readonly data: Readonly<Record<string, unknown>>;
}

/** The event with its data as its type defines it, or undefined (an unknown type or shape still gets a row). */
function typed(e: StoredAuditEvent): AuditEvent | undefined {
  const schema = (auditEventSchemas as Readonly<Record<string, (typeof auditEventSchemas)[keyof typeof auditEventSchemas]>>)[e.type];
  const data = schema?.safeParse(e.data);
  if (data === undefined || !data.success) return undefined;
  // The type and its parsed data belong together: the schema was looked up by this type.
  return { type: e.type, jobId: e.jobId, at: e.at, policyVersion: undefined, data: data.data } as AuditEvent;
}

export interface AuditRow {
  readonly time: string;
  readonly run: string;
  readonly job: string;
  readonly event: string;
  readonly tool: string;
  readonly target: string;
  readonly who: string;
  readonly outcome: string;
}

const text = (v: unknown): string => (typeof v === 'string' ? v : typeof v === 'number' || typeof v === 'boolean' ? String(v) : '');

/** What became of the event's subject, in a word or a few. */
function outcomeOf(e: AuditEvent): string {
  switch (e.type) {
    case 'policy_evaluation':
      return `${e.data.decision} → ${e.data.outcome}`;
    case 'policy_rule_matched':
      return `rule ${e.data.ruleId} v${e.data.ruleVersion}: ${e.data.action}${e.data.shadow ? ' (shadow)' : ''}`;
    case 'policy_notification_queued':
      return `rule ${e.data.ruleId}: administrator notified`;
    case 'policy_instruction_injected':
      return `${e.data.instructions} instruction(s) given to the model`;
    case 'policy_tool_denied':
      return `denied${e.data.ruleId !== null ? ` by rule ${e.data.ruleId}` : ''}: ${e.data.reason}`;
    case 'policy_task_stopped':
      return `stopped by rule ${e.data.ruleId}`;
    case 'approval_requested':
      return `waits for approval (rule ${e.data.ruleId}, expires ${e.data.expiresAt})`;
    case 'approval_decided':
      return `${e.data.decision === 'approve' ? 'approved' : 'denied'}${e.data.editedFingerprint !== undefined ? ' with edits' : ''}${e.data.reason !== undefined && e.data.reason !== null ? `: ${e.data.reason}` : ''}`;
    case 'approval_fingerprint_mismatch':
    case 'approval_rejected':
      return `decision rejected (${e.data.code}): ${e.data.reason}`;
    case 'approval_expired':
      return 'expired undecided';
    case 'notification_failed':
      return `notification not delivered: ${text(e.data.error)}`;
    case 'tool_executed':
      return e.data.skipped === 'not_needed' ? `not needed: ${text(e.data.reason)}` : e.data.reconciled === 'unknown' ? 'outcome unknown' : e.data.ok ? 'ran' : 'failed';
    case 'runtime_error':
      return `${e.data.code}: ${e.data.error}`;
    case 'judge_result':
      return `judge: ${e.data.result} (${e.data.status})`;
    case 'job_ended':
      return `${e.data.status}${e.data.reason !== undefined ? ` (${e.data.reason})` : ''}; ${e.data.facts}`;
    case 'job_cancelled':
      return 'cancelled';
    case 'mcp_refused':
      return `MCP request refused (${e.data.reason}) from ${e.data.remoteAddress}`;
    case 'mcp_call_refused':
      return `MCP call refused before the gate: ${text(e.data.reason)}`;
    default:
      return '';
  }
}

function field(e: StoredAuditEvent, name: string): string {
  return text(e.data[name]);
}

/** One event as a row; times in the reader's local time zone, to the second. */
export function auditRow(e: StoredAuditEvent, timeZone?: string): AuditRow {
  const at = new Date(e.at);
  const time = Number.isNaN(at.getTime())
    ? e.at
    : at.toLocaleString('sv-SE', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hour12: false });
  return {
    time,
    run: e.runId?.slice(0, 8) ?? '',
    job: e.jobId,
    event: e.type,
    tool: field(e, 'toolName'),
    target: field(e, 'target') || field(e, 'argsSummary'),
    who: field(e, 'reviewer') || field(e, 'requester') || field(e, 'agent'),
    outcome: ((t) => (t === undefined ? '' : outcomeOf(t)))(typed(e)),
  };
}

const HEADER: AuditRow = { time: 'TIME', run: 'RUN', job: 'JOB', event: 'EVENT', tool: 'TOOL', target: 'TARGET', who: 'WHO', outcome: 'OUTCOME' };
const LIMITS: Readonly<Record<keyof AuditRow, number>> = { time: 19, run: 8, job: 40, event: 29, tool: 16, target: 48, who: 16, outcome: 120 };

function cut(value: string, max: number): string {
  const flat = value.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

/** The rows padded into columns; `show` escapes each value for the terminal. */
export function auditTable(events: readonly StoredAuditEvent[], show: (text: string) => string = (t) => t, timeZone?: string): string[] {
  const keys = Object.keys(HEADER) as Array<keyof AuditRow>;
  const rows = [HEADER, ...events.map((e) => auditRow(e, timeZone))].map((r) => keys.map((k) => cut(show(r[k]), LIMITS[k])));
  const widths = keys.map((_, i) => Math.max(...rows.map((r) => r[i]?.length ?? 0)));
  return rows.map((r) =>
    r
      .map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd(),
  );
}
