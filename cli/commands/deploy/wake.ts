import { printJson, type CommandRun } from '../../command';
import { withClient } from '../../with-client';
import { noPositionals } from '../topology/options';

/** After `temporal worker deployment set-current-version`: one batch signal moves the parked jobs of older builds. */
export const run: CommandRun = async (args, io, command) => {
  noPositionals(args, command.usage);
  // Loaded once the arguments are checked, like every command's Temporal packages.
  const { DeploymentError, describeDeployment, wakeParked } = await import('../../../host/temporal/worker-deployments');
  const result = await withClient(io, async (client) => {
    const service = client.client.workflowService;
    const namespace = client.client.options.namespace;
    const state = await describeDeployment({ service, namespace });
    const current = state?.currentBuildId;
    if (current === undefined) throw new DeploymentError(`no build is current in namespace ${namespace}: start an agent worker, or airlock deploy promote BUILD`);
    const { selected } = await wakeParked({ service, namespace, buildId: current, identity: `airlock deploy wake (${client.client.options.identity})` });
    return { current, woken: selected };
  });
  if (args.values.json === true) printJson(io, result);
  else io.out(`woke ${result.woken} parked job${result.woken === 1 ? '' : 's'} of builds other than ${result.current}; each continues as new on ${result.current}`);
};
