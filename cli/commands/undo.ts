import type { PendingRequestView } from '../../core/job/job-view';
import { display } from '../../core/redaction/display-text';
import { isFileState } from '../../core/tools/observed-state';
import { parseDuration } from '../../core/util/duration';
import { undoArgs } from '../../core/tools/undo';
import { humanSize } from '../../core/util/human-size';
import type { UndoRecord } from '../../host/stores/nonces/undo-records';
import type { AirlockClient, SubmittedUndo } from '../../client/airlock-client';
import { cliName } from '../../client/cli-name';
import { jobIdArg, printJson, stringOption, type CommandIo, type CommandRun, type CommandSpec, type ParsedArgs } from '../command';
import { JobError, UsageError } from '../../client/errors';
import type { UndoableCall } from '../../client/history/undoable-calls';
import { withClient } from '../with-client';
import { reviewerName, signing } from './decision-output';

/** How long `undo` waits for the restore once it is approved (`--wait`). */
const DEFAULT_WAIT_MS = 60_000;

/** How an undo stands when the command returns. */
type UndoReport =
  | { readonly status: 'restored' | 'refused'; readonly detail: string }
  | { readonly status: 'waiting'; readonly requestId: string; readonly detail: string };

interface Reported {
  readonly jobId: string;
  readonly callId: string;
  readonly path: string;
  readonly undoJob: string;
  readonly report: UndoReport;
}

/** The call to undo: the one named, or the job's only one; several without `--call` are listed for the reader to pick. */
function chosenCall(jobId: string, calls: readonly UndoableCall[], callId: string | undefined, io: CommandIo): UndoableCall {
  if (callId !== undefined) {
    const named = calls.find((c) => c.callId === callId);
    if (named !== undefined) return named;
    throw new JobError(`job ${jobId} has no change ${callId} that ran${calls.length > 0 ? `; its changes that ran: ${calls.map((c) => c.callId).join(', ')}` : ''}`);
  }
  const [only, ...more] = calls;
  if (only === undefined) throw new JobError(`job ${jobId} made no change that can be undone (only deletes, overwrites, appends, mode changes, moves and bulk moves that ran, in folders set up for undo, are kept)`);
  if (more.length === 0) return only;
  for (const c of calls) io.err(display`  ${c.callId}: ${c.toolName} ${c.path}${c.moves !== undefined && c.moves.length > 1 ? ` (and ${c.moves.length - 1} more)` : ''}`);
  throw new UsageError(`job ${jobId} ran ${calls.length} changes that may be undone; name one with --call ID (listed above)`);
}

function waitOption(args: ParsedArgs): number {
  const text = stringOption(args, 'wait');
  if (text === undefined) return DEFAULT_WAIT_MS;
  const ms = parseDuration(text);
  if (ms === undefined) throw new UsageError(`--wait takes a duration such as 30s or 5m, got ${JSON.stringify(text)}`);
  return ms;
}

/** What the undo job answered, or how it ended. */
function answered(submitted: SubmittedUndo): UndoReport | undefined {
  const view = submitted.view;
  if (view.status !== 'answered') return undefined;
  return { status: view.isError ? 'refused' : 'restored', detail: view.text };
}

async function awaitRestore(airlock: AirlockClient, undoJob: string, requestId: string, waitMs: number): Promise<UndoReport> {
  const result = await airlock.undoResult(undoJob, waitMs);
  if (result === undefined) return { status: 'waiting', requestId, detail: `approved; the restore has not finished within ${Math.round(waitMs / 1000)} s` };
  const outcome = result.facts?.gated.at(-1)?.outcome;
  return { status: outcome === 'executed' ? 'restored' : 'refused', detail: result.summary ?? result.detail ?? `the undo job ended ${result.status}` };
}

/**
 * A parked undo: the reviewer who approved the change decides it at once,
 * with their signed decision (the built-in rule asks for no one else); a
 * rule that keeps requesters from deciding their own requests makes it
 * wait for another reviewer, as does anyone else's undo.
 */
async function decideOwn(airlock: AirlockClient, args: ParsedArgs, io: CommandIo, call: UndoableCall, undoJob: string, requestId: string, waitMs: number): Promise<UndoReport> {
  const reviewer = reviewerName(args, io);
  const waiting = (why: string): UndoReport => ({ status: 'waiting', requestId, detail: `${why}: \`${cliName(io.env)} approve ${undoJob}\`` });
  if (call.approvedBy !== reviewer) return waiting(call.approvedBy === undefined ? 'no reviewer approved that change, so the undo waits for one' : `${call.approvedBy} approved that change, not ${reviewer}; the undo waits for a reviewer`);
  const signed = signing(args, io);
  if (signed.key === undefined) return waiting(`the undo needs a signed decision and no key of ${reviewer} was found (${signed.advice})`);
  const outcome = await airlock.decide(undoJob, {
    decision: 'approve',
    cli: cliName(io.env),
    reviewer,
    signingKey: signed.key,
    requestId,
    reason: `undo by ${reviewer}, who approved the change`,
    // Signed only if the request is this very undo, and its card says nothing the reviewer did not see when approving the change.
    expect: { toolName: 'fs_undo', args: { ...undoArgs(call) }, unseen: otherNames },
  });
  if (outcome.accepted === false && outcome.code === 'needs_a_person') return waiting(`the undo waits for a reviewer to read its card: ${outcome.reason}`);
  if (outcome.accepted === false) return waiting(`the undo waits for another reviewer (${outcome.reason})`);
  if (outcome.accepted === 'queued') return waiting(`approved, not yet applied (${outcome.reason}); it restores when an agent worker runs`);
  return awaitRestore(airlock, undoJob, requestId, waitMs);
}

/**
 * A file the undo would put back that has other names (hard links): they
 * may lie outside the allowed folders, and putting it back changes it
 * under each of them. Its card says so, and a person decides it.
 */
function otherNames(request: PendingRequestView): string | undefined {
  const names = request.observed.flatMap((o) => (isFileState(o) && o.exists && o.links !== undefined && o.links > 1 ? [`${o.path} has ${o.links} names (hard links)`] : []));
  return names.length === 0 ? undefined : `${names.join('; ')}, possibly outside the allowed folders, and putting it back changes it under every one`;
}

function print(io: CommandIo, args: ParsedArgs, done: Reported): number {
  if (args.values.json === true) printJson(io, { jobId: done.jobId, callId: done.callId, path: done.path, undoJob: done.undoJob, ...done.report });
  else if (done.report.status === 'restored') io.out(display`${done.report.detail} (undo of call ${done.callId} of job ${done.jobId}, job ${done.undoJob})`);
  else if (done.report.status === 'waiting') io.out(display`waiting: request ${done.report.requestId} of job ${done.undoJob} — ${done.report.detail}`);
  else io.err(display`not restored: ${done.report.detail}`);
  return done.report.status === 'refused' ? 1 : 0;
}

/** How many held records `--list` shows at most. */
const LISTED = 200;

/** "a folder, 1000 files, 12 MiB" / "the mode of a file (back to 644)" / "a file's content before an overwrite, 4 KiB" … */
function heldText(r: UndoRecord): string {
  const change = r.change;
  const kind = r.held.type === 'directory' ? 'folder' : 'file';
  switch (change?.kind) {
    case 'mode':
      return `the mode of a ${kind} (back to ${r.held.mode})`;
    case 'replaced':
      return `a file's content before an overwrite, ${humanSize(r.held.bytes)}`;
    case 'appended':
      return `a file's length before an append (back to ${humanSize(change.size)})`;
    case 'moved':
      return `a ${entryText(r)} moved elsewhere${change.replaced !== undefined ? `, and the file it replaced (${humanSize(change.replaced.bytes)})` : ''}`;
    case 'moved_many':
      return `${change.entries.length} of ${change.count} entries moved elsewhere (${humanSize(r.held.bytes)} in total)`;
    default:
      return `a ${entryText(r)}`;
  }
}

/** The change as `--list --json` shows it: a bulk move by its counts (its entries are paths' digests, one per moved entry). */
function changeJson(r: UndoRecord) {
  const change = r.change ?? { kind: 'moved_aside' as const };
  return change.kind === 'moved_many' ? { kind: change.kind, count: change.count, moved: change.entries.length } : change;
}

function entryText(r: UndoRecord): string {
  if (r.held.type === 'file') return `file, ${humanSize(r.held.bytes)}`;
  return `folder, ${r.held.files !== null ? `${r.held.files} ${r.held.files === 1 ? 'file' : 'files'}, ` : ''}${humanSize(r.held.bytes)}`;
}

/** `--list`: what can still be undone (held and in its undo time), newest first, by job and call. */
async function list(args: ParsedArgs, io: CommandIo, command: CommandSpec): Promise<number> {
  const [jobId, ...rest] = args.positionals;
  if (rest.length > 0) throw new UsageError(`--list takes at most one job id; usage: ${command.usage}`);
  const { heldUndoRecords } = await import('./undo-records');
  const now = Date.now();
  // Records past their time wait for retention: read more than are shown, so they do not hide those still in time.
  const records = (await heldUndoRecords(io.config(), { limit: LISTED * 5, ...(jobId !== undefined ? { jobId } : {}) })).filter((r) => Date.parse(r.expiresAt) > now).slice(0, LISTED);
  if (args.values.json === true) {
    printJson(io, records.map((r) => ({ jobId: r.jobId, callId: r.callId, toolName: r.toolName, root: r.root, held: r.held, change: changeJson(r), heldAt: r.heldAt, expiresAt: r.expiresAt })));
    return 0;
  }
  if (records.length === 0) {
    io.out(jobId === undefined ? 'nothing can be undone now' : display`nothing of job ${jobId} can be undone now`);
    return 0;
  }
  for (const r of records) io.out(display`${r.jobId} ${r.callId}: ${r.toolName} of ${heldText(r)} in ${r.root}; undo until ${r.expiresAt} (${cliName(io.env)} undo ${r.jobId} --call ${r.callId})`);
  return 0;
}

export const run: CommandRun = async (args, io, command) => {
  if (args.values.list === true) return list(args, io, command);
  const jobId = jobIdArg(command, args);
  const callId = stringOption(args, 'call');
  const waitMs = waitOption(args);
  const requester = reviewerName(args, io);
  const done = await withClient(io, async (airlock): Promise<Reported> => {
    const { undoableCalls } = await import('../../client/history/undoable-calls');
    const call = chosenCall(jobId, await undoableCalls(airlock.client, jobId), callId, io);
    const submitted = await airlock.submitUndo({ jobId, callId: call.callId, path: call.path, ...(call.to !== undefined ? { to: call.to } : {}), ...(call.moves !== undefined ? { moves: call.moves } : {}), requester });
    const base = { jobId, callId: call.callId, path: call.path, undoJob: submitted.undoJobId };
    const view = submitted.view;
    const report = answered(submitted) ?? (view.status === 'parked' ? await decideOwn(airlock, args, io, call, submitted.undoJobId, view.requestId, waitMs) : undefined);
    if (report === undefined) throw new JobError(`the undo job ${submitted.undoJobId} gave no answer`);
    return { ...base, report };
  });
  return print(io, args, done);
};
