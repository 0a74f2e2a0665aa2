import { createReadStream, existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { auditEventTypes, type AuditEvent } from '../../core/audit';
import { display } from '../../core/display-text';
import { statePaths } from '../../host/paths';
import { printJson, stringOption, type CommandRun } from '../command';
import { UsageError } from '../errors';

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
  const events: AuditEvent[] = [];
  if (existsSync(file)) {
    for await (const line of createInterface({ input: createReadStream(file, 'utf8'), crlfDelay: Infinity })) {
      if (line.trim() === '') continue;
      let event: AuditEvent;
      try {
        event = JSON.parse(line) as AuditEvent;
      } catch {
        continue; // A torn last line from a crash is skipped, not fatal.
      }
      if ((job === undefined || event.jobId === job) && (type === undefined || event.type === type)) {
        events.push(event);
        if (events.length > limit.data) events.shift();
      }
    }
  }
  if (args.values.json === true) {
    printJson(io, events);
    return;
  }
  if (events.length === 0) io.out(display`no audit events${job !== undefined ? ` for job ${job}` : ''} in ${file}`);
  for (const e of events) io.out(display`${e.at} ${e.type} ${e.jobId} ${JSON.stringify(e.data)}`);
};
