import { standingUseText } from '../../core/approval/standing';
import { factsText } from '../../core/job/job-facts';
import { resultFacts } from '../../core/reviewer/progress';
import type { ApprovalCard, CliName } from '../../core/approval/card';
import { approvalCard, cardText } from '../../core/reviewer/approval-card';
import type { AuditHealth } from '../../core/audit/backlog';
import type { AgentJobStateView, DecidedRequestView } from '../../core/job/job-view';
import { display } from '../../core/redaction/display-text';
import type { JobStatusInfo } from '../../client/airlock-client';
import { inProgressLine } from '../../client/progress/waiting-activities';
import { cliName } from '../../client/cli-name';
import { jobIdArg, printJson, type CommandIo, type CommandRun } from '../command';
import { withClient } from '../with-client';

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

/** How long `show` waits for an agent worker to replay a closed job. */
const CLOSED_QUERY_MS = 10_000;

const outcomeText = {
  executed: 'executed',
  failed: 'FAILED',
  refused: 'NOT RUN: refused when checked again before running',
  unknown: 'OUTCOME UNKNOWN',
  not_needed: 'not run: no longer needed',
} as const;

/** How an executed change the card called reversible is taken back. */
function undoText(d: DecidedRequestView, jobId: string, cli: CliName): string {
  if (d.outcome !== 'executed' || d.undo?.reversible !== true || d.callId === undefined) return '';
  return `; reversible for ${d.undo.keepDays} ${d.undo.keepDays === 1 ? 'day' : 'days'} from when it ran: ${cli} undo ${jobId} --call ${d.callId}`;
}

/** Whether the approval stands for later calls, or was a use of a standing approval (no person asked now). */
function standingText(d: DecidedRequestView): string {
  const mark = d.standing;
  if (mark === undefined) return '';
  if (mark.kind === 'used') return `: ${standingUseText(mark, d.reviewer ?? '')}`;
  return `, standing for later calls as ${mark.id} (${mark.uses} ${mark.uses === 1 ? 'use' : 'uses'} until ${new Date(mark.until).toISOString().slice(0, 16).replace('T', ' ')} UTC)`;
}

/** One decided request: the decision, and for an approved call what became of it. */
function decidedLine(d: DecidedRequestView, ended: boolean, jobId: string, cli: CliName): string {
  const reviewer = d.reviewer !== null ? ` by ${d.reviewer}` : '';
  const reason = d.reason !== null ? `: ${d.reason}` : '';
  let after = '';
  if (d.status === 'approved' && d.outcome != null) after = ` — ${outcomeText[d.outcome]}${d.outcomeDetail != null ? `: ${d.outcomeDetail}` : ''}${undoText(d, jobId, cli)}`;
  else if (d.status === 'approved' && d.outcome === null && ended) after = ' — not run';
  else if (d.status === 'denied' || d.status === 'expired') after = ' — not run';
  return display`  ${d.status} ${d.toolName} (request ${d.requestId})${reviewer}${reason}${standingText(d)}${after}`;
}

/** The cards of a running job's pending requests. */
export function stateCards(s: AgentJobStateView, now: number, cli: CliName): ApprovalCard[] {
  return s.pending.map((request) => approvalCard({ jobId: s.jobId, goal: s.goal, request, batch: s.batch ?? null }, { now, cli }));
}

function printState(io: CommandIo, s: AgentJobStateView, info: JobStatusInfo, cards: readonly ApprovalCard[]): void {
  const closed = info.execution !== 'RUNNING';
  const was = closed && s.status !== info.status ? ` (it was ${s.status})` : '';
  io.out(display`job ${s.jobId}: ${info.status}${was} (turn ${s.turns}/${s.maxTurns})`);
  if (info.closedAt !== null && ['cancelled', 'terminated', 'timed_out'].includes(info.status)) io.out(display`  ended ${info.closedAt}`);
  if (info.cancelRequest !== undefined) io.out(cancelLine(info.cancelRequest));
  io.out(display`  goal: ${s.goal}`);
  if (s.policyVersion !== undefined) io.out(display`  policy ${s.policyVersion.slice(0, 12)}`);
  if (s.result !== null) {
    const reason = s.result.reason !== undefined ? ` (${s.result.reason})` : '';
    io.out(display`  result: ${s.result.status}${reason}`);
    // What the job recorded first; the summary is the model's claim.
    const facts = resultFacts(s.result);
    if (facts !== undefined) io.out(display`  what happened: ${factsText(facts)}`);
    if (s.result.summary !== undefined) io.out(display`  the model says: ${s.result.summary}`);
    if (s.result.detail !== undefined) io.out(display`  detail: ${s.result.detail}`);
  }
  if (s.pending.length > 0 && !closed) {
    io.out(`  waiting for ${s.pending.length} decision(s):`);
    for (const card of cards) for (const line of cardText(card, '    ')) io.out(line);
  } else if (s.pending.length > 0) {
    io.out(display`  undecided when it ended (nothing can decide them now):`);
    for (const r of s.pending) io.out(display`    ${r.toolName} (request ${r.requestId}), rule ${r.ruleId}`);
  }
  if (!closed) for (const a of info.inProgress) io.out(inProgressLine(a));
  const ended = s.result !== null || closed;
  for (const d of s.decided.slice(-10)) io.out(decidedLine(d, ended, s.jobId, cliName(io.env)));
  // Older workers' views have no such list.
  for (const r of s.reconciled ?? []) io.out(display`  ${r.toolName} (call ${r.callId}): ${reconciledText[r.reconciled]}`);
  // Older workers' views have no audit field; it is there once an audit write failed.
  if (s.audit !== undefined) io.out(display`  ${auditText(s.audit, s.result !== null)}`);
  const c = s.counters;
  const failed = s.decided.filter((d) => d.outcome === 'failed').length;
  const failedText = failed > 0 ? `, ${failed} approved call(s) failed` : '';
  io.out(display`  executed ${c.toolCallsExecuted} call(s)${failedText}, ${c.approvalRequests} approval request(s), ${c.rejectedDecisions} rejected decision(s)`);
}

function cancelLine(request: NonNullable<JobStatusInfo['cancelRequest']>): string {
  const by = request.identity !== '' ? ` by ${request.identity}` : '';
  return display`  cancelled${by}: ${request.reason !== '' ? request.reason : '(no reason given)'}`;
}

/** A closed job no worker could be asked about: what its record says. */
function printRecord(io: CommandIo, jobId: string, info: JobStatusInfo, problem: string): void {
  io.out(display`job ${jobId}: ${info.status}`);
  if (info.closedAt !== null) io.out(display`  ended ${info.closedAt}`);
  if (info.cancelRequest !== undefined) io.out(cancelLine(info.cancelRequest));
  io.out(display`  (its details need an agent worker: ${problem})`);
}

export const run: CommandRun = async (args, io, command) => {
  const jobId = jobIdArg(command, args);
  const { info, state, problem } = await withClient(io, async (client) => {
    // The record first: it exists without a worker, and it says how a job that ran no code ended.
    const info = await client.status(jobId);
    if (info.execution === 'RUNNING') return { info, state: await client.state(jobId), problem: undefined };
    try {
      return { info, state: await client.stateWithin(jobId, CLOSED_QUERY_MS), problem: undefined };
    } catch (err) {
      return { info, state: undefined, problem: err instanceof Error ? err.message.split('\n')[0] : String(err) };
    }
  });
  const cards = state !== undefined && info.execution === 'RUNNING' ? stateCards(state, Date.now(), cliName(io.env)) : [];
  if (args.values.json === true) {
    const record = { executionStatus: info.execution, closedAt: info.closedAt, inProgress: info.inProgress };
    printJson(io, state === undefined ? { jobId, status: info.status, ...record } : { ...state, status: info.status, jobStatus: state.status, ...record, cards });
  } else if (state === undefined) printRecord(io, jobId, info, problem ?? 'no answer');
  else printState(io, state, info, cards);
};
