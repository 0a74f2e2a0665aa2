import { bindAddress } from '../../core/config/config';
import { cliName } from '../cli-name';
import type { CommandRun } from '../command';
import { UsageError } from '../errors';

export const run: CommandRun = async (args, io, command) => {
  if (args.positionals.length > 0) throw new UsageError(`inbox takes no arguments; usage: ${command.usage}`);
  const config = io.config();
  const listenText = typeof args.values.listen === 'string' ? args.values.listen : undefined;
  if (listenText !== undefined && !bindAddress.safeParse(listenText).success) {
    throw new UsageError(`--listen takes IP:port, for example 127.0.0.1:7244 (0.0.0.0:7244 to serve other machines), got ${JSON.stringify(listenText)}`);
  }
  // The server (and Temporal's client) load only once the command line is known to be right.
  const [{ inboxSite }, { startInboxServer }] = await Promise.all([import('../inbox/site'), import('../inbox/inbox-server')]);
  const site = inboxSite(config, listenText);
  const server = await startInboxServer({ config, site, cli: cliName(io.env), log: io.err });
  io.out(`airlock inbox: serving ${server.url} (listening on ${server.address}; Temporal ${config.temporal.address}, namespace ${config.temporal.namespace})`);
  if (!config.notify.approvalPageUrl) io.out('  set AIRLOCK_APPROVAL_PAGE_URL to this URL on the agent workers so notifications link to it');
  await new Promise<void>((resolve) => {
    process.once('SIGINT', resolve);
    process.once('SIGTERM', resolve);
  });
  await server.close();
};
