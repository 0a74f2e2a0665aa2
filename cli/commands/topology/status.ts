import { printJson, type CommandRun } from '../../command';
import { noPositionals, topologyDir } from './options';

/** Exits 1 when any part is down or unhealthy, so a script or a supervisor can act on it. */
export const run: CommandRun = async (args, io, command) => {
  noPositionals(args, command.usage);
  const dir = topologyDir(args, io);
  const { topologyStatus } = await import('../../../ops/topology/topology');
  const { state, parts } = await topologyStatus(dir);
  const healthy = parts.every((p) => p.health.healthy);
  if (args.values.json === true) {
    printJson(io, { dir, healthy, temporalAddress: state.temporalAddress, webUi: state.webUi, approvalPage: state.approvalPage, parts });
  } else {
    const width = Math.max(...parts.map((p) => p.name.length));
    for (const p of parts) io.out(`${p.name.padEnd(width)}  ${p.health.healthy ? 'healthy  ' : p.running ? 'UNHEALTHY' : 'DOWN     '}  pid ${String(p.pid).padEnd(7)}  ${p.health.detail}`);
    io.out(healthy ? `all ${parts.length} parts healthy; Temporal ${state.temporalAddress}, Web UI ${state.webUi}` : `not healthy: see the logs in ${dir}/logs`);
  }
  return healthy ? 0 : 1;
};
