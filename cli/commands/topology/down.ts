import type { CommandRun } from '../../command';
import { noPositionals, topologyDir } from './options';

export const run: CommandRun = async (args, io, command) => {
  noPositionals(args, command.usage);
  const dir = topologyDir(args, io);
  const { topologyDown } = await import('../../../ops/topology/topology');
  const { stopped } = await topologyDown(dir, io.err);
  io.out(`topology down: ${stopped} running process${stopped === 1 ? '' : 'es'} stopped; the data stays in ${dir}`);
};
