import type { ApprovalCard } from '../approval/card';
import { approvalCard, type CardContext } from './approval-card';
import type { ParkedBatchView } from '../job/batch-view';
import { displayText } from '../redaction/display-text';
import type { PendingRequestView } from '../job/job-view';

/** A parked job as `pending` lists it. */
export interface PendingJobSource {
  readonly jobId: string;
  readonly goal: string;
  readonly pending: readonly PendingRequestView[];
  /** Absent for jobs parked by older builds. */
  readonly batch?: ParkedBatchView | null | undefined;
}

/** Every pending request's card, in listing order. */
export function pendingCards(jobs: readonly PendingJobSource[], context: CardContext): ApprovalCard[] {
  return jobs.flatMap((job) => job.pending.map((request) => approvalCard({ jobId: job.jobId, goal: job.goal, request, batch: job.batch ?? null }, context)));
}

/** Request ids are UUIDs: the table shows enough of one to pass to `--request` (a unique prefix is accepted). */
export const SHORT_REQUEST_CHARS = 8;
const TARGET_CHARS = 40;

function cell(text: string, max: number): string {
  const shown = displayText(text);
  return shown.length <= max ? shown : `${shown.slice(0, max - 1)}…`;
}

/** A path shortened from the middle: its start (which root) and its end (the file's name) stay. */
function pathCell(text: string, max: number): string {
  const shown = displayText(text);
  if (shown.length <= max) return shown;
  const tail = Math.ceil((max - 1) * 0.6);
  return `${shown.slice(0, max - 1 - tail)}…${shown.slice(shown.length - tail)}`;
}

const plural = (n: number, one: string, many: string) => `${n} ${n === 1 ? one : many}`;

/**
 * The table `pending` prints: one row per waiting request (job, request,
 * tool, target, rule, waiting, expires), a count line and how to see a
 * whole card. Every value is masked (by the card) and escaped.
 */
export function pendingTable(cards: readonly ApprovalCard[], cli: CardContext['cli']): string[] {
  if (cards.length === 0) return ['no job is waiting for approval'];
  const header = ['JOB', 'REQUEST', 'TOOL', 'TARGET', 'RULE', 'WAITING', 'EXPIRES'];
  const rows = cards.map((c) => [
    cell(c.jobId, 60),
    cell(c.requestId.slice(0, SHORT_REQUEST_CHARS), SHORT_REQUEST_CHARS),
    cell(c.operation.tool, 20),
    pathCell(c.operation.target, TARGET_CHARS),
    cell(`${c.rule.id} v${c.rule.version}`, 30),
    c.waiting.replace(/^waiting /, ''),
    c.expires.replace(/^expires /, ''),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]) =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i] ?? 0)))
      .join('  ')
      .trimEnd();
  const jobs = new Set(cards.map((c) => c.jobId)).size;
  const first = cards[0];
  // One request: its exact commands; several: the pattern.
  const example =
    first === undefined
      ? []
      : cards.length === 1
        ? [`approve: ${first.commands.approve}`, `deny:    ${first.commands.deny}`]
        : [`approve: ${cli} approve JOB --request REQUEST   deny: ${cli} deny JOB --request REQUEST --reason TEXT`];
  return [
    line(header),
    ...rows.map(line),
    '',
    `${plural(cards.length, 'request', 'requests')} waiting in ${plural(jobs, 'job', 'jobs')}`,
    `full cards (the model's reason, observed state, the batch, the exact commands): ${cli} pending --card, or ${cli} show JOB`,
    ...example,
  ];
}
