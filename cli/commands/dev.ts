import { userInfo } from 'node:os';
import { bindAddress } from '../../core/config/config';
import type { CommandRun } from '../command';
import { UsageError } from '../../client/errors';

export const run: CommandRun = async (args, io, command) => {
  if (args.positionals.length > 0) throw new UsageError(`dev takes no arguments; usage: ${command.usage}`);
  const config = io.config();
  const inboxListen = typeof args.values['inbox-listen'] === 'string' ? args.values['inbox-listen'] : undefined;
  if (inboxListen !== undefined && !bindAddress.safeParse(inboxListen).success) {
    throw new UsageError(`--inbox-listen takes IP:port, for example 127.0.0.1:7244, got ${JSON.stringify(inboxListen)}`);
  }
  // The whole stack (worker, SQLite, model client) loads only once the command line is known to be right.
  const { runDevStack } = await import('../../ops/dev/dev-stack');
  return runDevStack({
    config,
    demo: args.values.demo === true,
    codec: args.values.codec === true,
    requester: config.reviewer ?? userInfo().username,
    log: io.err,
    ...(inboxListen !== undefined ? { inboxListen } : {}),
  });
};
