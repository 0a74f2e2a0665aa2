import type { CommandRun } from '../../command';
import { UsageError } from '../../../client/errors';
import { basePort, noPositionals, topologyDir } from './options';

export const run: CommandRun = async (args, io, command) => {
  noPositionals(args, command.usage);
  const dir = topologyDir(args, io);
  const given = args.values['database-url'] ?? io.env.AIRLOCK_TOPOLOGY_DATABASE_URL;
  if (given !== undefined && (typeof given !== 'string' || !/^postgres(ql)?:\/\//.test(given))) {
    throw new UsageError('--database-url takes postgres://USER:PASSWORD@HOST:PORT/ (a role that may create databases)');
  }
  const { topologyUp } = await import('../../../ops/topology/topology');
  const started = Date.now();
  const state = await topologyUp({ dir, basePort: basePort(args), env: io.env, log: io.err, ...(given !== undefined ? { databaseUrl: given } : {}) });
  io.out(`topology up in ${Math.round((Date.now() - started) / 1000)} s: ${state.parts.length} processes in ${dir}`);
  io.out(`  Temporal       ${state.temporalAddress}   (TEMPORAL_ADDRESS for the CLI)`);
  io.out(`  Web UI         ${state.webUi}`);
  io.out(`  Approval page  ${state.approvalPage}`);
  io.out(`  Status         airlock topology status --dir ${dir}`);
  io.out(`  Stop           airlock topology down --dir ${dir}`);
};
