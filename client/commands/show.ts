import type { AuditHealth } from '../../core/audit-backlog';
import type { AgentJobStateView, PendingRequestView } from '../../core/job-view';
import { display } from '../../core/display-text';
import { describeObserved, isFileState, observedSubject } from '../../core/observed-state';
import { jobIdArg, printJson, type CommandIo, type CommandRun } from '../command';
import { withClient } from '../with-client';

export function printRequest(io: CommandIo, r: PendingRequestView, indent = '  '): void {
  io.out(display`${indent}request ${r.requestId}: ${r.toolName} ${JSON.stringify(r.args)}`);
  io.out(display`${indent}  rule ${r.ruleId} v${r.ruleVersion}: ${r.reason}`);
  for (const o of r.observed) {
    if (!isFileState(o)) {
      io.out(display`${indent}  target ${observedSubject(o)}: ${describeObserved(o)}`);
      continue;
    }
    const sha = o.exists && o.sha256 !== null ? `, sha256 ${o.sha256.slice(0, 16)}…` : '';
    const entries = o.exists && o.entries !== null ? `, ${o.entries} entries` : '';
    if (o.exists) io.out(display`${indent}  target ${o.path}: ${o.type}, ${o.size} bytes, mode ${o.mode}${sha}${entries}`);
    else io.out(display`${indent}  target ${o.path}: does not exist`);
  }
  if (r.editable.length > 0) io.out(display`${indent}  editable: ${r.editable.join(', ')}`);
  io.out(display`${indent}  fingerprint ${r.fingerprint}`);
  io.out(display`${indent}  expires ${r.expiresAt}`);
}

/** What `show` says of a call a retry settled from its target. */
const reconciledText = {
  ran_before: 'its attempt was interrupted before reporting; the target shows its effect, so it is recorded as run (not run again)',
  ran_now: 'an attempt was interrupted before its effect; the target was unchanged, so it ran on retry, once',
  unknown: 'OUTCOME UNKNOWN: its attempt was interrupted, and the target neither shows its effect nor is as before; check the target',
} as const;

/** What `show` says when audit writes failed: what waits, what is lost, and why. */
function auditText(a: AuditHealth, ended: boolean): string {
  const error = a.lastError !== null ? `; last error: ${a.lastError}` : '';
  const waiting = a.unwritten === 0 ? 'every event written since' : ended ? `${a.unwritten} event(s) never written` : `${a.unwritten} event(s) waiting to be written again`;
  const dropped = a.dropped > 0 ? `, ${a.dropped} event(s) dropped` : '';
  return `AUDIT: ${a.failures} write(s) to the audit log failed; ${waiting}${dropped}${error}`;
}

function printState(io: CommandIo, s: AgentJobStateView): void {
  io.out(display`job ${s.jobId}: ${s.status} (turn ${s.turns}/${s.maxTurns})`);
  io.out(display`  goal: ${s.goal}`);
  if (s.policyVersion !== undefined) io.out(display`  policy ${s.policyVersion.slice(0, 12)}`);
  if (s.result !== null) {
    const reason = s.result.reason !== undefined ? ` (${s.result.reason})` : '';
    const summary = s.result.summary !== undefined ? ` — ${s.result.summary}` : '';
    io.out(display`  result: ${s.result.status}${reason}${summary}`);
  }
  if (s.pending.length > 0) {
    io.out(`  waiting for ${s.pending.length} decision(s):`);
    for (const r of s.pending) printRequest(io, r, '    ');
  }
  for (const d of s.decided.slice(-10)) {
    const reviewer = d.reviewer !== null ? ` by ${d.reviewer}` : '';
    const reason = d.reason !== null ? `: ${d.reason}` : '';
    io.out(display`  ${d.status} ${d.toolName} (request ${d.requestId})${reviewer}${reason}`);
  }
  // Older workers' views have no such list.
  for (const r of s.reconciled ?? []) io.out(display`  ${r.toolName} (call ${r.callId}): ${reconciledText[r.reconciled]}`);
  // Older workers' views have no audit field; it is there once an audit write failed.
  if (s.audit !== undefined) io.out(display`  ${auditText(s.audit, s.result !== null)}`);
  const c = s.counters;
  io.out(display`  executed ${c.toolCallsExecuted} call(s), ${c.approvalRequests} approval request(s), ${c.rejectedDecisions} rejected decision(s)`);
}

export const run: CommandRun = async (args, io, command) => {
  const jobId = jobIdArg(command, args);
  const state = await withClient(io, (client) => client.state(jobId));
  if (args.values.json === true) printJson(io, state);
  else printState(io, state);
};
