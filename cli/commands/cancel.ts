import { display } from '../../core/redaction/display-text';
import { jobIdArg, printJson, stringOption, type CommandRun } from '../command';
import { withClient } from '../with-client';
import { cliName } from '../../client/cli-name';

export const run: CommandRun = async (args, io, command) => {
  const jobId = jobIdArg(command, args);
  const reason = stringOption(args, 'reason');
  const outcome = await withClient(io, (client) => client.cancel(jobId, reason !== undefined ? { reason } : {}));
  if (args.values.json === true) printJson(io, outcome);
  else if (outcome.status === 'cancel_requested') {
    io.out(display`cancellation of job ${outcome.jobId} requested; it ends cancelled once an agent worker runs it (\`${cliName(io.env)} show ${outcome.jobId}\`)`);
  } else if (outcome.status === 'cancelled') io.out(display`job ${outcome.jobId} is cancelled (run ${outcome.runId})`);
  else io.out(display`job ${outcome.jobId} ended ${outcome.status} before the cancellation took effect (run ${outcome.runId})`);
};
