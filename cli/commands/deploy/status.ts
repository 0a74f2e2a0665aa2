import { printJson, type CommandRun } from '../../command';
import { withClient } from '../../with-client';
import { noPositionals } from '../topology/options';
import { buildIdArg } from './build';

/** The agent deployment's builds: which is current, which drain, and how many jobs each still holds. */
export const run: CommandRun = async (args, io, command) => {
  noPositionals(args, command.usage);
  const config = io.config();
  const thisBuild = await buildIdArg([], config, command.usage);
  const { describeDeployment, jobsOnBuild } = await import('../../../host/temporal/worker-deployments');
  const { AGENT_DEPLOYMENT } = await import('../../../core/temporal/deployments');
  const status = await withClient(io, async (client) => {
    const service = client.client.workflowService;
    const namespace = client.client.options.namespace;
    const state = await describeDeployment({ service, namespace });
    const versions = await Promise.all(
      (state?.versions ?? []).map(async (v) => ({ ...v, ...(await jobsOnBuild({ service, namespace, buildId: v.buildId })) })),
    );
    return { namespace, deployment: AGENT_DEPLOYMENT, thisBuild, current: state?.currentBuildId ?? null, ramping: state?.rampingBuildId ?? null, versions };
  });
  if (args.values.json === true) {
    printJson(io, status);
    return;
  }
  if (status.versions.length === 0) {
    io.out(`no agent worker has polled namespace ${status.namespace} yet; this installation's build is ${thisBuild}`);
    return;
  }
  const width = Math.max(...status.versions.map((v) => v.buildId.length), 5);
  io.out(`${'BUILD'.padEnd(width)}  STATUS    RUNNING  PARKED`);
  for (const v of status.versions) {
    const mark = v.buildId === thisBuild ? '  (this installation)' : '';
    io.out(`${v.buildId.padEnd(width)}  ${v.status.padEnd(8)}  ${String(v.running).padStart(7)}  ${String(v.parked).padStart(6)}${mark}`);
  }
  const older = status.versions.filter((v) => v.buildId !== status.current && v.running > 0);
  if (status.current === null) io.out('no build is current: new jobs wait; airlock deploy promote BUILD');
  else if (older.some((v) => v.parked > 0)) io.out(`parked jobs of older builds move to ${status.current} when woken: airlock deploy wake`);
  else if (older.length > 0) io.out(`older builds still run jobs that are not parked; keep their agent workers until RUNNING is 0`);
};
