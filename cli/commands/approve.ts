import { cliName } from '../../client/cli-name';
import { jobIdArg, stringOption, type CommandRun, type ParsedArgs } from '../command';
import { MAX_STANDING_USES } from '../../core/approval/standing';
import { parseDuration } from '../../core/util/duration';
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

/** `--also-for 7d --uses 10`: both, or neither. */
function standingOf(args: ParsedArgs): { forMs: number; uses: number } | undefined {
  const alsoFor = stringOption(args, 'also-for');
  const uses = stringOption(args, 'uses');
  if (alsoFor === undefined && uses === undefined) return undefined;
  if (alsoFor === undefined) throw new UsageError('--uses goes with --also-for DURATION (how long the approval stands, e.g. --also-for 7d)');
  if (uses === undefined) throw new UsageError('--also-for needs --uses N: how many later calls the approval may cover (the rule says the most)');
  const forMs = parseDuration(alsoFor);
  if (forMs === undefined) throw new UsageError(`--also-for takes a duration such as 12h, 7d or 2w, got ${JSON.stringify(alsoFor)}`);
  if (!/^[1-9][0-9]{0,4}$/.test(uses)) throw new UsageError(`--uses takes a whole number from 1 to ${MAX_STANDING_USES}, got ${JSON.stringify(uses)}`);
  const n = Number(uses);
  if (n > MAX_STANDING_USES) throw new UsageError(`--uses takes a whole number from 1 to ${MAX_STANDING_USES}, got ${uses}`);
  return { forMs, uses: n };
}

export const run: CommandRun = async (args, io, command) => {
  const jobId = jobIdArg(command, args);
  const set = parseSets((args.values.set as string[] | undefined) ?? []);
  const standing = standingOf(args);
  const signed = signing(args, io);
  const outcome = await withClient(io, (client) =>
    client.decide(jobId, {
      decision: 'approve',
      cli: cliName(io.env),
      reviewer: reviewerName(args, io),
      ...(signed.key !== undefined ? { signingKey: signed.key } : { noKeyAdvice: signed.advice }),
      set,
      ...(standing !== undefined ? { standing } : {}),
      ...(stringOption(args, 'request') !== undefined ? { requestId: stringOption(args, 'request')! } : {}),
      ...(stringOption(args, 'reason') !== undefined ? { reason: stringOption(args, 'reason')! } : {}),
    }),
  );
  return reportDecision(args, io, outcome);
};
