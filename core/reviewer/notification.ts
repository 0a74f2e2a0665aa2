import { type ApprovalCard, approvalCardSchema } from '../approval/card';
import type { AuditEvent } from '../audit/events';
import { maskPreview, maskValue } from '../redaction/masking';
import { canonicalJson } from '../util/canonical-json';
import { sha256Hex } from '../util/sha256';
import { cardText, requestCommands, requestPageUrl } from './approval-card';
import { MAX_TEXT, NOTICE_DIFF_LINES, type Notice } from './notice';

/**
 * What a notification says about one job event, in airlock's generic JSON
 * form (versioned). Built from the event as the audit log holds it
 * (sanitized, masked), so nothing reaches an endpoint that the audit log
 * would not show. ntfy's form is derived from it.
 */

export interface NoticeContext {
  readonly namespace: string;
  readonly webUiUrl: string;
  readonly approvalPageUrl: string | undefined;
}

/** The Web UI's page of a job (its latest run). */
export function jobUrl(ctx: NoticeContext, jobId: string): string {
  return `${ctx.webUiUrl.replace(/\/+$/, '')}/namespaces/${encodeURIComponent(ctx.namespace)}/workflows/${encodeURIComponent(jobId)}`;
}

/** The approval page of a request, when one is configured. */
export function approvalUrl(ctx: NoticeContext, jobId: string, requestId: string): string | null {
  return ctx.approvalPageUrl === undefined ? null : requestPageUrl(ctx.approvalPageUrl, jobId, requestId);
}

/** The exact commands for one request (the CLI as installed with npm), worded as on the approval card. */
export function decisionCommands(jobId: string, requestId: string): { approve: string; deny: string } {
  const { approve, deny } = requestCommands('npx airlock', jobId, requestId, undefined);
  return { approve, deny };
}

/** One id per event: a retried audit write, or a worker restart, never notifies twice. */
export function noticeEventId(event: AuditEvent): string {
  // The job's own id for the event when it gave one: a workflow task redone after a crash records it again with another time.
  if (event.eventId !== undefined) return sha256Hex(`event:${event.eventId}`).slice(0, 32);
  return sha256Hex(canonicalJson({ type: event.type, jobId: event.jobId, at: event.at, data: event.data })).slice(0, 32);
}

/** The card masked again, like every other field of a notice. */
const maskedCard = (card: ApprovalCard): ApprovalCard => approvalCardSchema.parse(maskValue(card));

const text = (value: string | undefined | null): string | null => (value === undefined || value === null ? null : maskPreview(value, MAX_TEXT));

/**
 * The notice for an audit event that people are told about; undefined for
 * every other event. The event is masked again: a notice never relies on
 * its caller having sanitized it.
 */
export function noticeFor(event: AuditEvent, ctx: NoticeContext): Notice | undefined {
  const base = { schemaVersion: 1 as const, eventId: noticeEventId(event), at: event.at, jobId: text(event.jobId) ?? '', links: { job: jobUrl(ctx, event.jobId), approval: null } };
  switch (event.type) {
    case 'approval_requested': {
      const d = event.data;
      return withText({
        ...base,
        event: 'approval_requested',
        requestId: d.requestId,
        tool: d.toolName,
        target: text(d.target),
        args: text(d.argsSummary),
        rule: { id: d.ruleId, version: d.ruleVersion },
        reason: text(d.reason),
        requester: text(d.requester),
        expiresAt: d.expiresAt,
        decision: null,
        links: { ...base.links, approval: approvalUrl(ctx, event.jobId, d.requestId) },
        commands: d.card === undefined ? decisionCommands(event.jobId, d.requestId) : { approve: d.card.commands.approve, deny: d.card.commands.deny },
        card: d.card === undefined ? null : maskedCard(d.card),
      });
    }
    case 'approval_expired': {
      const d = event.data;
      return withText({
        ...base,
        event: 'approval_expired',
        requestId: d.requestId,
        tool: d.toolName,
        target: text(d.target),
        args: null,
        rule: d.ruleId === undefined ? null : { id: d.ruleId, version: null },
        reason: null,
        requester: null,
        expiresAt: event.at,
        decision: null,
        commands: null,
        card: null,
      });
    }
    case 'approval_decided': {
      const d = event.data;
      const outcome = d.decision === 'deny' ? 'denied' : d.editedFingerprint !== undefined ? 'edited' : 'approved';
      return withText({
        ...base,
        event: 'approval_decided',
        requestId: d.requestId,
        tool: d.toolName,
        target: text(d.target),
        args: null,
        rule: d.ruleId === undefined ? null : { id: d.ruleId, version: null },
        reason: null,
        requester: null,
        expiresAt: null,
        decision: { outcome, reviewer: text(d.reviewer) ?? '', reason: text(d.reason) },
        commands: null,
        card: null,
      });
    }
    case 'policy_notification_queued': {
      const d = event.data;
      return withText({
        ...base,
        event: 'admin_notification',
        requestId: null,
        tool: d.toolName,
        target: null,
        args: text(d.argsSummary),
        rule: { id: d.ruleId, version: d.ruleVersion },
        reason: text(d.reason),
        requester: null,
        expiresAt: null,
        decision: null,
        commands: null,
        card: null,
      });
    }
    case 'tool_executed': {
      const d = event.data;
      // Only approved calls close a reviewer's notice; allowed calls notify nobody.
      if (d.requestId === undefined) return undefined;
      const ran = d.ok && d.reconciled !== 'unknown';
      const outcome = d.skipped === 'not_needed' ? `not needed: ${d.reason ?? ''}` : d.reconciled === 'unknown' ? 'outcome unknown: check the target' : ran ? 'ran' : `failed: ${d.reason ?? ''}`;
      return withText({
        ...closing(base, d.requestId, d.toolName, text(d.target)),
        event: ran ? 'call_executed' : 'call_not_run',
        outcome: text(outcome),
      });
    }
    case 'runtime_error': {
      const d = event.data;
      if (d.requestId === undefined || d.toolName === undefined) return undefined;
      const why = d.code === 'revalidation_failed' ? `refused when checked again: ${d.error}` : `failed: ${d.error}`;
      return withText({ ...closing(base, d.requestId, d.toolName, null), event: 'call_not_run', outcome: text(why) });
    }
    case 'job_cancelled': {
      const pending = event.data.pending ?? [];
      const first = pending[0];
      return withText({
        ...closing(base, pending.length === 1 && first !== undefined ? first.requestId : null, first?.toolName ?? '', pending.length === 1 ? text(first?.target) : null),
        event: 'job_cancelled',
        outcome: pending.length > 0 ? text(`cancelled; ${pending.length} request(s) no longer wait: ${pending.map((p) => `${p.toolName}${p.target !== undefined ? ` ${p.target}` : ''}`).join(', ')}`) : 'cancelled',
        closes: pending.map((p) => p.requestId),
      });
    }
    case 'job_ended': {
      const d = event.data;
      if ((d.gated ?? 0) === 0) return undefined;
      const words = d.summary !== undefined ? ` The model says: “${d.summary}”` : '';
      return withText({ ...closing(base, null, '', null), event: 'job_ended', outcome: text(`${d.status}${d.reason !== undefined ? ` (${d.reason})` : ''}; ${d.facts}.${words}`) });
    }
    default:
      return undefined;
  }
}

/** The fields of a closing notice that no request-specific field fills. */
function closing(base: Pick<Notice, 'schemaVersion' | 'eventId' | 'at' | 'jobId' | 'links'>, requestId: string | null, tool: string, target: string | null) {
  return { ...base, requestId, tool, target, args: null, rule: null, reason: null, requester: null, expiresAt: null, decision: null, commands: null, card: null };
}

/**
 * Title and text of a notice: the one place that words it (switch it to the
 * approval card when that renders from the same fields).
 */
function withText(notice: Omit<Notice, 'title' | 'text'>): Notice {
  const on = notice.target !== null ? ` on ${notice.target}` : '';
  const rule = notice.rule === null ? [] : [`rule: ${notice.rule.id}${notice.rule.version !== null ? ` v${notice.rule.version}` : ''}${notice.reason !== null ? ` — ${notice.reason}` : ''}`];
  const request = notice.requestId === null ? [] : [`request: ${notice.requestId}`];
  let title: string;
  let lines: string[];
  switch (notice.event) {
    case 'approval_requested':
      title = `Approval needed: ${notice.tool}${on}`;
      // The card is the one wording of a waiting request; events from builds before it fall back to the fields.
      if (notice.card !== null) {
        // A phone shows a few lines of a diff; the card's other surfaces show it all.
        lines = [`Job ${notice.jobId} waits for a decision:`, ...cardText(notice.card, '', { changeLines: NOTICE_DIFF_LINES })];
        break;
      }
      lines = [
        `Job ${notice.jobId} waits for a decision on ${notice.tool}${on}.`,
        ...(notice.args !== null ? [`arguments: ${notice.args}`] : []),
        ...rule,
        ...(notice.requester !== null ? [`requested by: ${notice.requester}`] : []),
        ...request,
        ...(notice.expiresAt !== null ? [`expires: ${notice.expiresAt}`] : []),
        ...(notice.commands !== null ? [`approve: ${notice.commands.approve}`, `deny: ${notice.commands.deny}`] : []),
      ];
      break;
    case 'approval_expired':
      title = `Approval expired: ${notice.tool}${on}`;
      lines = [`Nobody decided in time: job ${notice.jobId} goes on without ${notice.tool}${on}.`, ...rule, ...request];
      break;
    case 'approval_decided': {
      const d = notice.decision;
      const outcome = d?.outcome ?? 'decided';
      title = `${outcome[0]?.toUpperCase() ?? ''}${outcome.slice(1)}: ${notice.tool}${on}`;
      lines = [
        `${d?.reviewer ?? 'A reviewer'} ${outcome === 'edited' ? 'approved an edited' : outcome} ${notice.tool}${on} in job ${notice.jobId}.`,
        ...(d?.reason !== null && d?.reason !== undefined ? [`reason: ${d.reason}`] : []),
        ...rule,
        ...request,
      ];
      break;
    }
    case 'admin_notification':
      title = `Rule ${notice.rule?.id ?? ''} noticed ${notice.tool}`;
      lines = [`Job ${notice.jobId} called ${notice.tool}.`, ...(notice.args !== null ? [`arguments: ${notice.args}`] : []), ...rule];
      break;
    case 'call_executed':
      // An undo that ran says what it gave back, not which tool did it.
      if (notice.tool === 'fs_undo') {
        title = `Undone: ${notice.target ?? 'an approved change'}`;
        lines = [`Put back as it was before the change: ${notice.target ?? 'what it changed'} (undo job ${notice.jobId}).`, ...request];
        break;
      }
      title = `Done: ${notice.tool}${on}`;
      lines = [`The approved ${notice.tool}${on} in job ${notice.jobId} ${notice.outcome ?? 'ran'}.`, ...request];
      break;
    case 'call_not_run':
      title = `Not run: ${notice.tool}${on}`;
      lines = [`The approved ${notice.tool}${on} in job ${notice.jobId} did not run: ${notice.outcome ?? ''}`, ...request];
      break;
    case 'job_cancelled':
      title = `Cancelled: job ${notice.jobId}`;
      lines = [`Job ${notice.jobId} was ${notice.outcome ?? 'cancelled'}.`];
      break;
    case 'job_ended':
      title = `Ended: job ${notice.jobId}`;
      lines = [`Job ${notice.jobId} ${notice.outcome ?? 'ended'}`];
      break;
  }
  return { ...notice, title, text: lines.join('\n') };
}
