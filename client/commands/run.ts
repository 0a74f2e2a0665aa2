import { z } from 'zod';
import { userInfo } from 'node:os';
import { sideEffectToolNames } from '../../core/tools/registry';
import { display } from '../../core/display-text';
import { printJson, stringOption, type CommandRun } from '../command';
import { UsageError } from '../errors';
import { withClient } from '../with-client';

const optionsSchema = z.strictObject({
  goal: z.string().trim().min(1, '--goal must not be empty'),
  id: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/, '--id may hold letters, digits, ".", "_" and "-"').optional(),
  maxTurns: z.coerce.number().int().min(1).max(1000).optional(),
  tools: z
    .string()
    .transform((v) => v.split(',').map((t) => t.trim()).filter((t) => t !== ''))
    .refine((names) => names.every((n) => sideEffectToolNames.includes(n)), {
      message: `--tools takes registered tool names: ${sideEffectToolNames.join(', ')}`,
    })
    .optional(),
});

export const run: CommandRun = async (args, io, command) => {
  if (stringOption(args, 'goal') === undefined) throw new UsageError(`--goal is required; usage: ${command.usage}`);
  const parsed = optionsSchema.safeParse({
    goal: stringOption(args, 'goal'),
    id: stringOption(args, 'id'),
    maxTurns: stringOption(args, 'max-turns'),
    tools: stringOption(args, 'tools'),
  });
  if (!parsed.success) throw new UsageError(parsed.error.issues[0]?.message ?? 'invalid options');
  const options = parsed.data;
  return withClient(io, async (client) => {
    const started = await client.startJob({
      goal: options.goal,
      requester: io.config().reviewer ?? userInfo().username,
      ...(options.id !== undefined ? { jobId: options.id } : {}),
      ...(options.maxTurns !== undefined ? { maxTurns: options.maxTurns } : {}),
      ...(options.tools !== undefined ? { tools: options.tools } : {}),
    });
    if (args.values.wait !== true) {
      if (args.values.json === true) printJson(io, started);
      else io.out(display`started job ${started.jobId}\n  follow it: airlock show ${started.jobId}`);
      return 0;
    }
    const result = await client.result(started.jobId);
    if (args.values.json === true) printJson(io, { ...started, result });
    else {
      const reason = result.reason !== undefined ? ` (${result.reason})` : '';
      const summary = result.summary !== undefined ? `: ${result.summary}` : '';
      io.out(display`job ${started.jobId} ${result.status}${reason}${summary}`);
    }
    return result.status === 'completed' ? 0 : 1;
  });
};
