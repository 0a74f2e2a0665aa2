/**
 * core/reviewer/ — What reviewers see and receive: the approval card built
 * from a job's view and rendered for each surface (terminal, Markdown,
 * JSON), the pending table and memo, notifications, and the progress lines
 * of a followed job.
 *
 * May import: util, temporal, redaction, tools, approval, audit, job.
 */

import type { BatchCallView, ParkedBatchView } from '../job/batch-view';
import { callTarget } from '../job/batch-view';
import { onMachine } from '../job/approval-request';
import { display, displayText } from '../redaction/display-text';
import type { PendingRequestView } from '../job/job-view';
import { maskPreview, maskString, maskValue, summarizeArgs } from '../redaction/masking';
import { describeObserved, isFileState, observedSubject } from '../tools/observed-state';
import { EDIT_NOTE, type ApprovalCard, type CliName } from '../approval/card';
import { actionSentence } from './action-sentence';
import { changeLines, changeOf } from './change-view';
import { standingOffer } from '../approval/standing';
import { formatDuration } from '../util/duration';

/**
 * The approval card: everything a reviewer needs to decide one request,
 * built once from the request and its job, and rendered for every surface
 * (terminal text for `show` and `pending`, Markdown for the Web UI, the
 * object itself for `--json` and notifications). Pure: times are relative
 * to the `now` passed in.
 */

/** What a card is built from: a pending request as reviewers see it, and its job. */
export interface CardSource {
  readonly jobId: string;
  readonly goal: string;
  readonly request: PendingRequestView;
  /** The parked batch (null from jobs parked by older builds). */
  readonly batch: ParkedBatchView | null;
}

export interface CardContext {
  readonly now: number;
  readonly cli: CliName;
}

/** A span of time the way people say it: 45s, 3m, 23h, 6d 2h. */
export function humanDuration(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 60) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 24) return `${h}h`;
  const d = Math.floor(h / 24);
  return h % 24 === 0 ? `${d}d` : `${d}d ${h % 24}h`;
}

export function waitingText(createdAt: number, now: number): string {
  return `waiting ${humanDuration(now - createdAt)}`;
}

export function expiresText(expiresAt: number, now: number): string {
  return expiresAt > now ? `expires in ${humanDuration(expiresAt - now)}` : `expired ${humanDuration(now - expiresAt)} ago`;
}

/**
 * Who may decide a request and how, in words, from what the job holds:
 * the rule's reviewers (or anyone), whether the decision must be signed,
 * and whether the requester is excluded. Which names hold keys is known
 * where the reviewer keys file is read, not here.
 */
export function mayDecideText(r: Pick<PendingRequestView, 'reviewers' | 'signatureRequired' | 'separateRequester' | 'requester'>): string {
  const who = r.reviewers === null ? (r.signatureRequired === true ? 'any reviewer with a key or passkey' : 'anyone') : r.reviewers.length === 0 ? 'nobody' : r.reviewers.join(', ');
  const how = r.signatureRequired === true ? '; a signed decision is required (key or passkey)' : r.signatureRequired === false ? '; unsigned decisions count' : '';
  const not = r.separateRequester === true ? `; not the requester (${r.requester})` : '';
  return `${who}${how}${not}`;
}

/** A word for a POSIX shell: as is when it is plain, else single-quoted. */
export function shellWord(word: string): string {
  return /^[A-Za-z0-9._:@%+=,/-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

/** The exact commands that decide one request; `edit` when a field may be edited. */
export function requestCommands(cli: CliName, jobId: string, requestId: string, editable: string | undefined): ApprovalCard['commands'] {
  const target = `${shellWord(jobId)} --request ${shellWord(requestId)}`;
  return {
    approve: `${cli} approve ${target}`,
    deny: `${cli} deny ${target} --reason TEXT`,
    edit: editable !== undefined ? `${cli} approve ${target} --set ${editable}=VALUE` : null,
  };
}

export function approvalCard(source: CardSource, context: CardContext): ApprovalCard {
  const { request: r, jobId } = source;
  const created = Date.parse(r.createdAt);
  const expires = Date.parse(r.expiresAt);
  const args = maskValue(r.args);
  const record = args !== null && typeof args === 'object' && !Array.isArray(args) ? (args as Record<string, unknown>) : {};
  const others: BatchCallView[] = (source.batch?.calls ?? []).filter((c) => c.callId !== r.callId);
  const change = changeOf(r);
  return {
    schemaVersion: 1,
    jobId,
    requestId: r.requestId,
    goal: maskPreview(source.goal, 500),
    action: maskString(actionSentence({ toolName: r.toolName, args: r.args, observed: r.observed, target: callTarget(r.toolName, record), ...(r.undo !== undefined ? { undo: r.undo } : {}) })),
    ...(r.undo?.reversible === true ? { undoDays: r.undo.keepDays } : r.undo !== undefined ? { undoWhy: maskString(r.undo.why) } : {}),
    operation: { tool: r.toolName, target: onMachine(r.machine, callTarget(r.toolName, record)), args, summary: summarizeArgs(args, 300) },
    ...(r.machine !== undefined ? { machine: r.machine } : {}),
    ...(change !== undefined ? { change } : {}),
    observed: r.observed.map((o) => {
      // Services and other subjects have no folder totals; their line says what they are.
      const file = isFileState(o) ? o : undefined;
      const tree = file?.exists === true && file.tree?.complete === true ? file.tree : undefined;
      return {
        path: maskString(observedSubject(o)),
        exists: o.exists,
        text: maskString(describeObserved(o)),
        files: tree?.files ?? null,
        entries: tree?.entries ?? null,
        bytes: tree !== undefined ? tree.bytes : file?.exists === true && file.type !== 'directory' ? file.size : null,
      };
    }),
    rule: { id: r.ruleId, version: r.ruleVersion, reason: maskString(r.reason) },
    statedReason: source.batch?.statedReason != null ? maskString(source.batch.statedReason) : null,
    otherCalls: others.map((c) => ({ tool: c.toolName, target: maskString(c.target), decision: maskString(c.decision), requestId: c.requestId })),
    editable: [...r.editable],
    editNote: EDIT_NOTE,
    requester: maskString(r.requester),
    reviewers: r.reviewers === null ? null : r.reviewers.map(maskString),
    mayDecide: maskString(mayDecideText(r)),
    createdAt: r.createdAt,
    expiresAt: r.expiresAt,
    waiting: waitingText(created, context.now),
    expires: expiresText(expires, context.now),
    fingerprint: r.fingerprint,
    commands: requestCommands(context.cli, jobId, r.requestId, r.editable[0]),
    ...standingOfCard(r, context.cli, jobId),
  };
}

/** The card's one sentence on a standing approval, with the command that asks for one (a week and ten uses, or less where the rules say less). */
function standingOfCard(r: CardSource['request'], cli: CliName, jobId: string): Pick<ApprovalCard, 'standing'> {
  const offer = standingOffer({ toolName: r.toolName, requester: maskString(r.requester), standing: r.standing });
  if (offer === undefined || r.standing === undefined) return {};
  const forMs = Math.min(r.standing.maxForMs, 7 * 86_400_000);
  const uses = Math.min(r.standing.maxUses, 10);
  return { standing: { offer, command: `${cli} approve ${jobId} --request ${r.requestId} --also-for ${formatDuration(forMs)} --uses ${uses}` } };
}

const STATED_REASON_LINES = 8;

/** The card as terminal lines, every value escaped for the terminal (one value, one line); `changeLines` caps the diff (notifications). */
export function cardText(card: ApprovalCard, indent = '  ', options: { readonly changeLines?: number } = {}): string[] {
  const i = indent;
  const change = card.change === undefined ? [] : changeLines(card.change, options.changeLines);
  const lines = [
    // The sentence first: what will happen, in words; the exact call follows.
    ...(card.action !== undefined ? [display`${i}${card.action}`] : []),
    display`${i}request ${card.requestId}: ${card.operation.tool} ${card.operation.target}`,
    display`${i}  arguments: ${card.operation.summary}`,
    ...change.map((line, n) => (n === 0 ? display`${i}  changes: ${line}` : display`${i}    ${line}`)),
    ...card.observed.map((o) => display`${i}  target ${o.path}: ${o.text}`),
    display`${i}  rule ${card.rule.id} v${card.rule.version}: ${card.rule.reason}`,
  ];
  if (card.statedReason === null) lines.push(`${i}  the model's reason: (none given)`);
  else {
    const said = card.statedReason.split('\n').filter((l) => l.trim() !== '');
    lines.push(`${i}  the model's reason:`, ...said.slice(0, STATED_REASON_LINES).map((l) => display`${i}    ${l}`));
    if (said.length > STATED_REASON_LINES) lines.push(`${i}    … (${said.length - STATED_REASON_LINES} more lines)`);
  }
  if (card.otherCalls.length > 0) {
    lines.push(`${i}  same batch:`);
    for (const c of card.otherCalls) lines.push(display`${i}    ${c.tool} ${c.target}: ${c.decision}`);
  }
  const editable = card.editable.length > 0 ? card.editable.join(', ') : 'nothing';
  lines.push(display`${i}  may edit: ${editable} (${card.editNote})`);
  const reviewers = card.mayDecide ?? (card.reviewers === null ? 'anyone' : card.reviewers.join(', '));
  lines.push(display`${i}  requested by ${card.requester}, ${card.waiting}, ${card.expires} (${utcMinute(card.expiresAt)}); may decide: ${reviewers}`);
  lines.push(display`${i}  fingerprint ${card.fingerprint}`);
  lines.push(display`${i}  approve: ${card.commands.approve}`);
  if (card.commands.edit !== null) lines.push(display`${i}  edit:    ${card.commands.edit}`);
  lines.push(display`${i}  deny:    ${card.commands.deny}`);
  if (card.standing !== undefined) lines.push(display`${i}  ${card.standing.offer}`, display`${i}  and again: ${card.standing.command}`);
  return lines;
}

/** Inline code that holds any text: a fence longer than any backtick run in it. */
function code(text: string): string {
  const clean = displayText(text);
  const longest = Math.max(0, ...[...clean.matchAll(/`+/g)].map((m) => m[0].length));
  const fence = '`'.repeat(longest + 1);
  const pad = clean.startsWith('`') || clean.endsWith('`') ? ' ' : '';
  return `${fence}${pad}${clean}${pad}${fence}`;
}

/** Plain text in Markdown: nothing in it formats, links or opens HTML. */
export function md(text: string): string {
  return displayText(text).replace(/[\\`*_{}[\]()<>#+!|~-]/g, (c) => (c === '<' ? '&lt;' : c === '>' ? '&gt;' : `\\${c}`));
}

/** A fenced block that holds any lines: a fence longer than any backtick run in them. */
function fenced(lines: readonly string[], info: string): string[] {
  const clean = lines.map((l) => displayText(l));
  const longest = Math.max(2, ...clean.flatMap((l) => [...l.matchAll(/`+/g)].map((m) => m[0].length)));
  const fence = '`'.repeat(longest + 1);
  return [`${fence}${info}`, ...clean, fence];
}

/** The change as a list item: its heading, then the diff or the moves in a fenced block (indented under the item). */
function changeMarkdown(card: ApprovalCard): string[] {
  if (card.change === undefined) return [];
  const [heading = '', ...body] = changeLines(card.change);
  return [`- **changes:** ${md(heading)}`, ...(body.length > 0 ? ['', ...fenced(body, card.change.kind === 'diff' ? 'diff' : '').map((l) => `  ${l}`), ''] : [])];
}

/** A command as shell lines of `--option value` pairs, so a narrow box wraps it where a shell reads it the same (` \\` continues the line). */
function wrappedCommand(command: string): string[] {
  // A quoted word may hold " --" itself: such a command stays on one line.
  if (command.includes("'")) return [command];
  const parts = command.split(/ (?=--)/);
  return parts.map((p, n) => `${n === 0 ? '' : '  '}${p}${n < parts.length - 1 ? ' \\' : ''}`);
}

/** The approval page's address of one request (`encodeURIComponent`, and parentheses too, which close a Markdown link). */
export function requestPageUrl(approvalPage: string, jobId: string, requestId: string): string {
  const enc = (s: string) => encodeURIComponent(s).replace(/\(/g, '%28').replace(/\)/g, '%29');
  return `${approvalPage.replace(/\/+$/, '')}/jobs/${enc(jobId)}/requests/${enc(requestId)}`;
}

/** One card in Markdown; `approvalPage` (the page's URL) adds a link to decide there. */
export function cardMarkdown(card: ApprovalCard, approvalPage?: string): string {
  const lines = [
    ...(card.action !== undefined ? [`#### ${md(card.action)}`, '', `- **call:** ${md(card.operation.tool)} on ${code(card.operation.target)}`] : [`#### ${md(card.operation.tool)} on ${code(card.operation.target)}`, '']),
    `- **arguments:** ${code(card.operation.summary)}`,
    ...changeMarkdown(card),
    ...card.observed.map((o) => `- **target** ${code(o.path)}: ${md(o.text)}`),
    `- **rule:** ${code(card.rule.id)} v${card.rule.version} — ${md(card.rule.reason)}`,
    `- **the model's reason:** ${card.statedReason === null ? '(none given)' : md(card.statedReason.replace(/\s+/g, ' '))}`,
  ];
  if (card.otherCalls.length > 0) {
    lines.push('- **same batch:**', ...card.otherCalls.map((c) => `  - ${md(c.tool)} ${code(c.target)}: ${md(c.decision)}`));
  }
  lines.push(
    `- **may edit:** ${card.editable.length > 0 ? card.editable.map(code).join(', ') : 'nothing'} (${md(card.editNote)})`,
    // The Web UI shows this long after it was written: absolute times, never a frozen "waiting 0s".
    `- **requested by** ${md(card.requester)} at ${md(utcMinute(card.createdAt))}; expires ${md(utcMinute(card.expiresAt))}`,
    `- **may decide:** ${md(card.mayDecide ?? (card.reviewers === null ? 'anyone' : card.reviewers.join(', ')))}`,
    `- **request** ${code(card.requestId)}, fingerprint ${code(card.fingerprint)}`,
    ...(card.standing !== undefined ? [`- **and again:** ${md(card.standing.offer)}`] : []),
    '',
  );
  if (approvalPage !== undefined) lines.push(`**Decide** on the approval page: [open this request](${requestPageUrl(approvalPage, card.jobId, card.requestId)}), or from a terminal where airlock is configured for this server:`);
  else lines.push('**Decide** from a terminal where airlock is configured for this server:');
  // One block per command: copying one never runs another (and no `#` line trips a shell without comments).
  const commands: Array<[string, string]> = [['approve', card.commands.approve], ...(card.commands.edit !== null ? [['approve with an edit', card.commands.edit] as [string, string]] : []), ['deny', card.commands.deny]];
  for (const [label, command] of commands) lines.push('', `${label}:`, '', ...fenced(wrappedCommand(command), 'sh'));
  return lines.join('\n');
}

/** An ISO time to the minute, in UTC, as people read it: "2026-12-02 16:44 UTC". */
export function utcMinute(iso: string): string {
  const t = Date.parse(iso);
  return Number.isNaN(t) ? iso : `${new Date(t).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

/** The Web UI's current details of a parked job: its cards, or nothing when nothing waits; `approvalPage` links each to the page. */
export function cardsMarkdown(cards: readonly ApprovalCard[], now: number, approvalPage?: string): string {
  if (cards.length === 0) return '';
  return [
    `### Waiting for approval (${cards.length})`,
    '',
    `Written ${md(utcMinute(new Date(now).toISOString()))}.`,
    '',
    cards.map((card) => cardMarkdown(card, approvalPage)).join('\n\n---\n\n'),
  ].join('\n');
}
