import { createReadStream, existsSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { z } from 'zod';
import { auditEventTypes, type AuditEvent } from '../../core/audit';
import { display } from '../../core/display-text';
import { statePaths } from '../../host/paths';
import { defineCommand, printJson, stringOption } from '../command';
import { UsageError } from '../errors';

const limitSchema = z.coerce.number().int().min(1).max(100_000);

export const auditCommand = defineCommand({
  name: 'audit',
  summary: "Read this machine's audit log (newest last), filtered by job and event type",
  usage: `airlock audit [--job JOB_ID] [--type ${auditEventTypes.slice(0, 2).join('|')}|…] [--limit N] [--json]`,
  options: { job: { type: 'string' }, type: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' } },
  async run(args, io) {
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
  },
});
