import { createReadStream, existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { auditEventTypes } from '../../core/audit/events';
import { display } from '../../core/redaction/display-text';
import { statePaths } from '../../host/paths';
import { printJson, stringOption, type CommandRun } from '../command';
import { UsageError } from '../errors';

/** The envelope every event has; its data is shown as written. */
const lineSchema = z.looseObject({
  type: z.string(),
  jobId: z.string(),
  at: z.string(),
  /** Absent in events written before runs were recorded. */
  runId: z.string().optional(),
  data: z.record(z.string(), z.unknown()),
});

type AuditLine = z.infer<typeof lineSchema>;

function parseLine(line: string): AuditLine | undefined {
  let raw: unknown;
  try {
    raw = JSON.parse(line);
  } catch {
    return undefined;
  }
  const parsed = lineSchema.safeParse(raw);
  // Shown, not interpreted: an event type or field this build does not know is still printed as it is.
  return parsed.success ? parsed.data : undefined;
}

const limitSchema = z.coerce.number().int().min(1).max(100_000);

export const run: CommandRun = async (args, io) => {
  const type = stringOption(args, 'type');
  if (type !== undefined && !(auditEventTypes as readonly string[]).includes(type)) {
    throw new UsageError(`--type takes one of ${auditEventTypes.join(', ')}`);
  }
  const limit = limitSchema.safeParse(stringOption(args, 'limit') ?? '100');
  if (!limit.success) throw new UsageError('--limit takes a whole number between 1 and 100000');
  const file = statePaths(io.config()).audit;
  const job = stringOption(args, 'job');
  const runId = stringOption(args, 'run');
  if (runId !== undefined && runId.trim() === '') throw new UsageError('--run takes a run id (or the start of one), as `airlock audit --job JOB_ID` shows it');
  const events: AuditLine[] = [];
  const unreadable: number[] = [];
  if (existsSync(file)) {
    let lineNumber = 0;
    for await (const line of createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity })) {
      lineNumber++;
      if (line.trim() === '') continue;
      const event = parseLine(line);
      if (event === undefined) {
        // Said, never skipped quietly: a line that is not an event is a damaged log.
        unreadable.push(lineNumber);
        continue;
      }
      const inRun = runId === undefined || (event.runId !== undefined && event.runId.startsWith(runId));
      if ((job === undefined || event.jobId === job) && inRun && (type === undefined || event.type === type)) {
        events.push(event);
        if (events.length > limit.data) events.shift();
      }
    }
  }
  if (unreadable.length > 0) {
    const shown = unreadable.slice(0, 10).join(', ');
    const more = unreadable.length > 10 ? `, and ${unreadable.length - 10} more` : '';
    io.err(display`airlock audit: ${unreadable.length} line(s) of ${file} are not audit events and were not shown: lines ${shown}${more}`);
  }
  if (args.values.json === true) {
    printJson(io, events);
    return;
  }
  if (events.length === 0) {
    const of = [job !== undefined ? ` for job ${job}` : '', runId !== undefined ? ` in run ${runId}` : ''].join('');
    io.out(display`no audit events${of} in ${file}`);
  }
  // A job id can have several runs (`run --id X --new-run`): each event says which one wrote it.
  for (const e of events) {
    const run = e.runId !== undefined ? display` (run ${e.runId})` : '';
    io.out(display`${e.at} ${e.type} ${e.jobId}` + run + display` ${JSON.stringify(e.data)}`);
  }
  const runs = new Set(events.flatMap((e) => (e.runId !== undefined ? [e.runId] : [])));
  if (job !== undefined && runId === undefined && runs.size > 1) {
    io.err(display`airlock audit: job ${job} has events of ${runs.size} runs (${[...runs].join(', ')}); show one with --run RUN_ID`);
  }
};
