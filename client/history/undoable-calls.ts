import type { Client } from '@temporalio/client';
import { z } from 'zod';
import { JobError } from '../errors';
import { executeResultSchema, payloadDecoder, type HistoryEvent, type Payloads } from './payloads';
import { jobsQuery, listRuns, runHistories } from './runs';
import type { Move } from '../../core/tools/fs/move-plan';

/**
 * The changes of a past job that `airlock undo` may take back, read from
 * the job's own history: each `execute` the job scheduled (the call as it
 * ran, a reviewer's edit included, and who approved it) and what it
 * answered. Only a delete, a write, a mode change, a move or a bulk move that ran is a candidate; whether
 * it was kept for undo is the tools side's to say (its record), when the
 * undo runs.
 */

/** The part of an `execute` input read here; the rest is the gate's. */
const executedInputSchema = z.object({
  jobId: z.string(),
  callId: z.string(),
  toolName: z.string(),
  args: z.record(z.string(), z.unknown()),
  approved: z.object({ reviewer: z.string(), reversible: z.boolean().optional() }).partial().optional(),
});

/** Tools whose changes can be kept for undo, the argument naming what they changed, and a move's destination. */
const REVERSIBLE: Readonly<Record<string, { readonly path: string; readonly to?: string } | { readonly moves: string }>> = {
  fs_delete: { path: 'path' },
  fs_chmod: { path: 'path' },
  fs_write: { path: 'path' },
  fs_move: { path: 'from', to: 'to' },
  fs_move_many: { moves: 'moves' },
};

const movesSchema = z.array(z.object({ from: z.string(), to: z.string() })).min(1);

export interface UndoableCall {
  readonly jobId: string;
  readonly callId: string;
  readonly toolName: string;
  /** What the call changed, as it named it (a move's source). */
  readonly path: string;
  /** A move's destination, as it named it. */
  readonly to?: string;
  /** A bulk move's whole list, as it named it (`path` is its first source). */
  readonly moves?: readonly Move[];
  /** The reviewer who approved it; undefined for a call no reviewer was asked about. */
  readonly approvedBy: string | undefined;
  /** The card promised it reversible. */
  readonly promised: boolean;
  /** What the tool answered. */
  readonly output: string;
}

/** Reads the job's histories (every run) and lists its changes that ran and could have been kept, oldest first. */
export async function undoableCalls(client: Client, jobId: string): Promise<UndoableCall[]> {
  const decodeList = payloadDecoder(client);
  const decode = (payloads: Payloads) => decodeList(payloads?.payloads ?? []);
  const runs = (await listRuns(client, jobsQuery({ jobId }))).sort((a, b) => a.startTime.getTime() - b.startTime.getTime());
  const { histories, skipped } = await runHistories(client, jobId, runs);
  // A run that cannot be read could hold the very change: say so rather than offer less.
  const first = skipped[0];
  if (first !== undefined) throw new JobError(`run ${first.runId} of job ${jobId} cannot be read (${first.reason}); its changes cannot be listed for undo`);
  const found: UndoableCall[] = [];
  for (const history of histories) found.push(...(await fromEvents(history.events, decode)));
  // A call retried in a later run is the same change: its last answer counts.
  const byCall = new Map(found.map((c) => [c.callId, c]));
  return [...byCall.values()];
}

/** The calls of one run's events that may be undone (`decode` turns an activity's payloads into its value). */
export async function fromEvents(events: readonly HistoryEvent[], decode: (p: Payloads) => Promise<unknown>): Promise<UndoableCall[]> {
  const scheduled = new Map<string, z.infer<typeof executedInputSchema>>();
  const calls: UndoableCall[] = [];
  for (const event of events) {
    const s = event.activityTaskScheduledEventAttributes;
    if (s?.activityType?.name === 'execute') {
      const input = executedInputSchema.safeParse(await decode(s.input));
      if (input.success && REVERSIBLE[input.data.toolName] !== undefined) scheduled.set(String(event.eventId), input.data);
      continue;
    }
    const ended = event.activityTaskFailedEventAttributes ?? event.activityTaskTimedOutEventAttributes;
    const bulk = ended === undefined || ended === null ? undefined : scheduled.get(String(ended.scheduledEventId));
    // A bulk move may have moved entries before it failed or timed out (a retry that found its grant expired): whether it kept them is the tools side's to say.
    if (bulk?.toolName === 'fs_move_many') {
      const named = movedOf(bulk.args.moves, '');
      if (named !== undefined) calls.push({ jobId: bulk.jobId, callId: bulk.callId, toolName: bulk.toolName, ...named, approvedBy: bulk.approved?.reviewer, promised: bulk.approved?.reversible === true, output: ended?.failure?.message ?? '' });
      continue;
    }
    const done = event.activityTaskCompletedEventAttributes;
    const input = done === undefined || done === null ? undefined : scheduled.get(String(done.scheduledEventId));
    if (done === undefined || done === null || input === undefined) continue;
    const result = executeResultSchema.safeParse(await decode(done.result));
    // Refused before it ran (`refused`), nothing of it happened.
    if (!result.success || result.data.refused !== undefined) continue;
    const fields = REVERSIBLE[input.toolName] ?? { path: 'path' };
    const named = 'moves' in fields ? movedOf(input.args[fields.moves], result.data.output) : changedOf(input.args, fields, result.data.ok);
    // A new file replaced nothing: there is nothing to put back.
    if (named === undefined || (input.toolName === 'fs_write' && input.args.mode !== 'overwrite' && input.args.mode !== 'append')) continue;
    calls.push({
      jobId: input.jobId,
      callId: input.callId,
      toolName: input.toolName,
      ...named,
      approvedBy: input.approved?.reviewer,
      promised: input.approved?.reversible === true,
      output: result.data.output ?? '',
    });
  }
  return calls;
}

/** What a call that ran named: its path (and a move's destination); undefined for one that did not run. */
function changedOf(args: Record<string, unknown>, fields: { readonly path: string; readonly to?: string }, ok: boolean): { path: string; to?: string } | undefined {
  const path = args[fields.path];
  const to = fields.to === undefined ? undefined : args[fields.to];
  if (!ok || typeof path !== 'string' || (fields.to !== undefined && typeof to !== 'string')) return undefined;
  return { path, ...(typeof to === 'string' ? { to } : {}) };
}

/**
 * A bulk move's list: it may have moved entries even when it stopped part
 * way, failed (a full disk under its journal) or was refused after an
 * interruption; only one that says it moved nothing is left out.
 */
function movedOf(value: unknown, output: string | undefined): { path: string; moves: Array<{ from: string; to: string }> } | undefined {
  const moves = movesSchema.safeParse(value);
  const first = moves.data?.[0];
  if (first === undefined || /^(moved 0 of |Refused: nothing was moved|Refused: the approved change was to be reversible)/.test(output ?? '')) return undefined;
  return { path: first.from, moves: moves.data ?? [] };
}
