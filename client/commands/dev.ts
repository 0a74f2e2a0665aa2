import { userInfo } from 'node:os';
import type { CommandRun } from '../command';
import { UsageError } from '../errors';

export const run: CommandRun = async (args, io, command) => {
  if (args.positionals.length > 0) throw new UsageError(`dev takes no arguments; usage: ${command.usage}`);
  const config = io.config();
  // The whole stack (worker, SQLite, model client) loads only once the command line is known to be right.
  const { runDevStack } = await import('../dev/dev-stack');
  return runDevStack({
    config,
    demo: args.values.demo === true,
    codec: args.values.codec === true,
    requester: config.reviewer ?? userInfo().username,
    log: io.err,
  });
};
