import type { CommandRun } from '../../command';
import { UsageError } from '../../../client/errors';
import { topologyDir } from './options';

export const run: CommandRun = async (args, io, command) => {
  const [part, ...rest] = args.positionals;
  if (part === undefined || rest.length > 0) throw new UsageError(`expected one part name (postgres, temporal, ui, inbox, agent-1, …); usage: ${command.usage}`);
  const dir = topologyDir(args, io);
  const { topologyRestart } = await import('../../../ops/topology/topology');
  await topologyRestart({ dir, part, env: io.env, log: io.err });
  io.out(`${part} restarted and healthy`);
};
