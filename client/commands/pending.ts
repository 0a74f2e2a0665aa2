import { display } from '../../core/display-text';
import { printJson, type CommandRun } from '../command';
import { UsageError } from '../errors';
import { withClient } from '../with-client';
import { printRequest } from './show';

export const run: CommandRun = async (args, io, command) => {
  if (args.positionals.length > 0) throw new UsageError(`pending takes no arguments; usage: ${command.usage}`);
  const jobs = await withClient(io, (client) => client.listPending());
  if (args.values.json === true) {
    printJson(io, jobs);
    return;
  }
  if (jobs.length === 0) {
    io.out('no job is waiting for approval');
    return;
  }
  for (const job of jobs) {
    io.out(display`job ${job.jobId}: ${job.goal}`);
    for (const r of job.pending) printRequest(io, r);
    const request = job.pending.length > 1 ? ' --request ID' : '';
    io.out(display`  approve: airlock approve ${job.jobId}${request}   deny: airlock deny ${job.jobId} --reason TEXT`);
  }
};
