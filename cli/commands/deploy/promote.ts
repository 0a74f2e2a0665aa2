import { printJson, type CommandRun } from '../../command';
import { withClient } from '../../with-client';
import { buildIdArg } from './build';

/** Makes a build current, then wakes the parked jobs of older builds so they move to it at once. */
export const run: CommandRun = async (args, io, command) => {
  const config = io.config();
  const buildId = await buildIdArg(args.positionals, config, command.usage);
  const { promote, wakeParked } = await import('../../../host/temporal/worker-deployments');
  const result = await withClient(io, async (client) => {
    const service = client.client.workflowService;
    const namespace = client.client.options.namespace;
    const identity = `airlock deploy promote (${client.client.options.identity})`;
    const { previous } = await promote({ service, namespace, buildId, identity });
    const woken = args.values['keep-parked'] === true ? undefined : await wakeParked({ service, namespace, buildId, identity });
    return { buildId, previous: previous ?? null, woken: woken?.selected ?? null };
  });
  if (args.values.json === true) {
    printJson(io, result);
    return;
  }
  io.out(`build ${buildId} is current${result.previous !== null && result.previous !== buildId ? ` (was ${result.previous})` : ''}: new jobs start on it`);
  if (result.woken === null) io.out(`parked jobs of older builds move when next woken; to wake them now: airlock deploy wake`);
  else io.out(`woke ${result.woken} parked job${result.woken === 1 ? '' : 's'} of older builds; each continues as new on ${buildId} (airlock deploy status shows what older builds still hold)`);
};
