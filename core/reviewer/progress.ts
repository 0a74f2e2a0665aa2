import { display } from '../redaction/display-text';
import { maskPreview, maskString, summarizeArgs } from '../redaction/masking';
import type { AgentJobResult } from '../job/job-input';
import { everyGatedCallRan, factsText, jobFactsSchema, type JobFacts } from '../job/job-facts';
import { getTool } from '../tools/registry';

/**
 * What people waiting on a job see happen, one line per event: `airlock
 * dev` for every job, `airlock run --wait` for its own. The events are
 * read from the job's history (see client/progress/); every text
 * is masked and escaped here, whatever its source.
 */
export type ProgressEvent =
  | { readonly kind: 'started'; readonly goal: string }
  | {
      readonly kind: 'parked';
      readonly requestId: string;
      readonly toolName: string;
      readonly target: string;
      readonly ruleId: string;
      readonly reason: string;
    }
  | {
      readonly kind: 'decided';
      readonly requestId: string;
      readonly toolName: string;
      readonly decision: 'approve' | 'deny';
      readonly reviewer: string;
      readonly edited: boolean;
      readonly reason: string | undefined;
    }
  | { readonly kind: 'expired'; readonly requestId: string; readonly toolName: string }
  /** Ended by an operator (its agent's token revoked), not by a reviewer: not run. */
  | { readonly kind: 'withdrawn'; readonly requestId: string; readonly toolName: string; readonly by: string; readonly reason: string }
  /** `ok` false: the tool ran and reported a failure, or the attempt failed. */
  | { readonly kind: 'executed'; readonly toolName: string; readonly target: string; readonly ok: boolean; readonly detail: string | undefined }
  /** An approved call that no longer held when checked again: nothing ran. */
  | { readonly kind: 'refused'; readonly toolName: string; readonly target: string; readonly reason: string }
  | { readonly kind: 'ended'; readonly end: JobEnd };

/** How a job ended: its own result, or what Temporal says ended it. */
export type JobEnd =
  | { readonly status: 'result'; readonly result: AgentJobResult }
  | { readonly status: 'failed'; readonly message: string }
  | { readonly status: 'cancelled' }
  | { readonly status: 'terminated'; readonly reason: string }
  | { readonly status: 'timed_out' };

const TEXT_MAX = 160;

/** Masked and shortened: a goal or a reason can be long and may hold a secret. */
function text(value: string): string {
  return maskPreview(value.replace(/\s+/g, ' ').trim(), TEXT_MAX);
}

/** The paths a call acts on, as its tool names them; the raw argument object when the tool is unknown. */
export function callTarget(toolName: string, args: unknown): string {
  const tool = getTool(toolName);
  const parsed = tool?.parameters.safeParse(args);
  if (tool !== undefined && parsed?.success === true) {
    const targets = tool.targets(parsed.data);
    if (targets.length > 0) return maskString(targets.join(', '));
  }
  return summarizeArgs(args, 80);
}

/** The status word of an end, as `show` and the search attribute spell it. */
export function endStatus(end: JobEnd): string {
  return end.status === 'result' ? end.result.status : end.status;
}

/** The facts a result carries, if it carries any this build reads. */
export function resultFacts(result: AgentJobResult): JobFacts | undefined {
  const parsed = jobFactsSchema.safeParse(result.facts);
  return parsed.success ? parsed.data : undefined;
}

/**
 * How a job ended, facts first: "completed; 0 of 1 approved calls ran:
 * fs_delete /x refused (target changed). The model says: “…”". A result
 * without facts (an older build) shows the summary, labelled the same way.
 */
export function endText(end: JobEnd): string {
  switch (end.status) {
    case 'result': {
      const { result } = end;
      const why = result.reason !== undefined ? ` (${result.reason})` : '';
      const facts = resultFacts(result);
      const factLine = facts === undefined ? '' : `; ${factsText(facts, text)}`;
      const detail = result.detail !== undefined ? `: ${text(result.detail)}` : '';
      const words = result.summary !== undefined ? `. The model says: “${text(result.summary)}”` : '';
      return display`${result.status}${why}${detail}${factLine}${words}`;
    }
    case 'failed':
      return display`failed: ${text(end.message)}`;
    case 'terminated':
      return display`terminated${end.reason !== '' ? `: ${text(end.reason)}` : ''}`;
    case 'cancelled':
      return 'cancelled';
    case 'timed_out':
      return 'timed out';
  }
}

/**
 * `airlock run --wait`'s exit code for an end: 0 completed with every call a
 * reviewer was asked about approved and run; 3 completed, but some such
 * call was denied, expired, refused, failed or did not run; 1 did not
 * complete (failed, aborted, cancelled, terminated, timed out).
 */
export function endExitCode(end: JobEnd): 0 | 1 | 3 {
  if (end.status !== 'result' || end.result.status !== 'completed') return 1;
  const facts = resultFacts(end.result);
  return facts === undefined || everyGatedCallRan(facts) ? 0 : 3;
}

/** One line for one event of a job. */
export function progressLine(jobId: string, event: ProgressEvent): string {
  const job = maskString(jobId);
  switch (event.kind) {
    case 'started':
      return display`${job} started: ${text(event.goal)}`;
    case 'parked':
      return display`${job} parked: ${event.toolName} ${event.target} (rule ${event.ruleId}: ${text(event.reason)}) request ${event.requestId}`;
    case 'decided': {
      const verb = event.decision === 'approve' ? (event.edited ? 'approved with edits' : 'approved') : 'denied';
      const why = event.reason !== undefined && event.reason !== '' ? `: ${text(event.reason)}` : '';
      return display`${job} ${verb} by ${maskString(event.reviewer)}${why} (${event.toolName}, request ${event.requestId})`;
    }
    case 'expired':
      return display`${job} expired: request ${event.requestId} (${event.toolName}) was not decided in time; it counts as denied`;
    case 'withdrawn':
      return display`${job} withdrawn by ${maskString(event.by)}: ${text(event.reason)} (${event.toolName}, request ${event.requestId}); not run`;
    case 'executed':
      return event.ok
        ? display`${job} executed: ${event.toolName} ${event.target}`
        : display`${job} execution failed: ${event.toolName} ${event.target}${event.detail !== undefined ? `: ${text(event.detail)}` : ''}`;
    case 'refused':
      return display`${job} refused: ${event.toolName} ${event.target}: ${text(event.reason)}`;
    case 'ended':
      return display`${job} ${endText(event.end)}`;
  }
}
