import { jobIdArg, stringOption, type CommandRun } from '../command';
import { withClient } from '../with-client';
import { reportDecision, reviewerName, signingKey } from './decision-output';

export const run: CommandRun = async (args, io, command) => {
  const jobId = jobIdArg(command, args);
  const key = signingKey(args, io);
  const outcome = await withClient(io, (client) =>
    client.decide(jobId, {
      decision: 'deny',
      reviewer: reviewerName(args, io),
      ...(key !== undefined ? { signingKey: key } : {}),
      ...(stringOption(args, 'request') !== undefined ? { requestId: stringOption(args, 'request')! } : {}),
      ...(stringOption(args, 'reason') !== undefined ? { reason: stringOption(args, 'reason')! } : {}),
    }),
  );
  return reportDecision(args, io, outcome);
};
