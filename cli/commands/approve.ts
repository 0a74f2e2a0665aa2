import { cliName } from '../../client/cli-name';
import { jobIdArg, stringOption, type CommandRun } from '../command';
import { UsageError } from '../../client/errors';
import { withClient } from '../with-client';
import { reportDecision, reviewerName, signing } from './decision-output';

function parseSets(values: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const item of values) {
    const eq = item.indexOf('=');
    if (eq <= 0) throw new UsageError(`--set takes field=value, got ${JSON.stringify(item)}`);
    const field = item.slice(0, eq).trim();
    if (!/^[A-Za-z_][A-Za-z0-9_.]*$/.test(field)) throw new UsageError(`--set: ${JSON.stringify(field)} is not a field name`);
    out[field] = item.slice(eq + 1);
  }
  return out;
}

export const run: CommandRun = async (args, io, command) => {
  const jobId = jobIdArg(command, args);
  const set = parseSets((args.values.set as string[] | undefined) ?? []);
  const signed = signing(args, io);
  const outcome = await withClient(io, (client) =>
    client.decide(jobId, {
      decision: 'approve',
      cli: cliName(io.env),
      reviewer: reviewerName(args, io),
      ...(signed.key !== undefined ? { signingKey: signed.key } : { noKeyAdvice: signed.advice }),
      set,
      ...(stringOption(args, 'request') !== undefined ? { requestId: stringOption(args, 'request')! } : {}),
      ...(stringOption(args, 'reason') !== undefined ? { reason: stringOption(args, 'reason')! } : {}),
    }),
  );
  return reportDecision(args, io, outcome);
};
