import { cliName } from '../../client/cli-name';
import { jobIdArg, stringOption, type CommandRun } from '../command';
import { UsageError } from '../../client/errors';
import { withClient } from '../with-client';
import { reportDecision, reviewerName, signing } from './decision-output';

export const run: CommandRun = async (args, io, command) => {
  const jobId = jobIdArg(command, args);
  // The model is told the reason (and the audit keeps it), as the approval page asks for one too.
  const reason = stringOption(args, 'reason')?.trim();
  if (reason === undefined || reason === '') throw new UsageError(`deny needs --reason TEXT: the job tells the model why, and the audit keeps it; usage: ${command.usage}`);
  const signed = signing(args, io);
  const outcome = await withClient(io, (client) =>
    client.decide(jobId, {
      decision: 'deny',
      cli: cliName(io.env),
      reviewer: reviewerName(args, io),
      ...(signed.key !== undefined ? { signingKey: signed.key } : { noKeyAdvice: signed.advice }),
      ...(stringOption(args, 'request') !== undefined ? { requestId: stringOption(args, 'request')! } : {}),
      reason,
    }),
  );
  return reportDecision(args, io, outcome);
};
