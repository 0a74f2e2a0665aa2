import { z } from 'zod';
import { userInfo } from 'node:os';
import { sideEffectToolNames } from '../../core/tools/registry';
import { display } from '../../core/redaction/display-text';
import { endExitCode, endText, progressLine } from '../../core/reviewer/progress';
import type { AirlockClient, StartedJob } from '../../client/airlock-client';
import { printJson, stringOption, type CommandIo, type CommandRun } from '../command';
import { JobError, UsageError } from '../../client/errors';
import { cliName } from '../../client/cli-name';
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
  const newRun = args.values['new-run'] === true;
  if (newRun && options.id === undefined) throw new UsageError('--new-run goes with --id (a job without --id gets a new id anyway)');
  return withClient(io, async (client) => {
    const started = await client.startJob({
      goal: options.goal,
      cli: cliName(io.env),
      requester: io.config().reviewer ?? userInfo().username,
      ...(options.id !== undefined ? { jobId: options.id, newRun } : {}),
      ...(options.maxTurns !== undefined ? { maxTurns: options.maxTurns } : {}),
      ...(options.tools !== undefined ? { tools: options.tools } : {}),
    });
    if (args.values.wait !== true) {
      if (args.values.json === true) printJson(io, started);
      else io.out(display`started job ${started.jobId}\n  follow it: ${cliName(io.env)} show ${started.jobId}`);
      return 0;
    }
    if (args.values.json === true) {
      const result = await client.result(started.jobId);
      printJson(io, { ...started, result });
      return endExitCode({ status: 'result', result });
    }
    return waitWithProgress(io, client, started);
  });
};

/**
 * Shows the job's progress while it runs, read from its history on the
 * server (the workers may be on other machines), and ends with its result.
 * A parked call says how to decide it.
 */
async function waitWithProgress(io: CommandIo, client: AirlockClient, started: StartedJob): Promise<number> {
  const { jobId } = started;
  // The prefix the reader types, as every other command prints it.
  const cli = cliName(io.env);
  // Loaded here: a usage error of `run` loads no Temporal package.
  const { followJob } = await import('../../client/progress/follow-job');
  const { watchWaits } = await import('../../client/progress/waiting-activities');
  const waits = new AbortController();
  // A call waiting for a tools worker that is not running shows nothing in the history until it runs: say so meanwhile.
  const watching = watchWaits(client, jobId, (line) => io.out(line), waits.signal);
  let end;
  try {
    end = await followJob({
      client: client.client,
      jobId,
      runId: started.runId,
      onEvent: (event) => {
        if (event.kind === 'ended') return;
        io.out(progressLine(jobId, event));
        if (event.kind === 'parked') {
          io.out(display`  waiting for approval; in another terminal: ${cli} approve ${jobId} --request ${event.requestId}`);
          io.out(display`  or: ${cli} deny ${jobId} --request ${event.requestId} --reason "…"   (details: ${cli} show ${jobId})`);
        }
      },
    });
  } finally {
    waits.abort();
    await watching;
  }
  if (end === undefined) throw new JobError(`lost track of job ${jobId}; see ${cli} show ${jobId}`);
  io.out(display`job ${jobId} ${endText(end)}`);
  return endExitCode(end);
}
