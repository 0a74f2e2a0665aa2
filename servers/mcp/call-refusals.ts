import { randomUUID } from 'node:crypto';
import { sanitizeAuditEvent } from '../../core/audit/events';
import { describeError } from '../../core/temporal/describe-error';
import type { AuditSink } from '../../host/stores/audit-log/store';
import { agentJobId } from './agent-job';

/** Refused calls audited a minute at most; beyond, one line on stderr says how many were not. */
const AUDITED_PER_MINUTE = 120;

/**
 * Writes the calls an agent's job refused before its gate to the audit
 * log (the job cannot: a rejected update leaves no history). Fire and
 * forget: a client's answer never waits for, or fails with, the audit.
 */
export function callRefusalAuditor(audit: AuditSink, log: (line: string) => void): (refusal: { readonly agent: string; readonly toolName: string; readonly reason: string }) => void {
  let window = { start: Date.now(), audited: 0, dropped: 0 };
  return ({ agent, toolName, reason }) => {
    const now = Date.now();
    if (now - window.start >= 60_000) {
      if (window.dropped > 0) log(`airlock mcp: ${window.dropped} refused call(s) in the last minute were not audited (more than ${AUDITED_PER_MINUTE} a minute)`);
      window = { start: now, audited: 0, dropped: 0 };
    }
    if (window.audited >= AUDITED_PER_MINUTE) {
      window.dropped++;
      return;
    }
    window.audited++;
    const data = { agent, toolName: toolName.slice(0, 200), reason: reason.slice(0, 2000) };
    const event = sanitizeAuditEvent({ type: 'mcp_call_refused', jobId: agentJobId(agent), at: new Date(now).toISOString(), policyVersion: undefined, eventId: randomUUID(), data });
    audit.write([event]).catch((err: unknown) => log(`airlock mcp: could not audit a refused call of ${agent}: ${describeError(err)}`));
  };
}
