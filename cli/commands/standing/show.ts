import { display } from '../../../core/redaction/display-text';
import { printJson, type CommandRun } from '../../command';
import { JobError, UsageError } from '../../../client/errors';
import { cliName } from '../../../client/cli-name';
import { withStandingStores } from './store';
import { coversLine, standingJson, standingState } from './text';

export const run: CommandRun = async (args, io, command) => {
  const [id, ...rest] = args.positionals;
  if (id === undefined || rest.length > 0) throw new UsageError(`expected one standing approval id; usage: ${command.usage}`);
  const now = Date.now();
  const found = await withStandingStores(io.config(), async ({ standing }) => {
    const view = await standing.get(id);
    return view === undefined ? undefined : { view, uses: await standing.usesOf(id) };
  });
  if (found === undefined) throw new JobError(`no standing approval ${id} (\`${cliName(io.env)} standing list --all\` lists them)`);
  const { view, uses } = found;
  if (args.values.json === true) {
    printJson(io, { ...standingJson(view, now), uses });
    return;
  }
  const r = view.record;
  io.out(display`standing approval ${r.id}: ${standingState(view, now)}`);
  io.out(display`  covers: ${coversLine(view)}`);
  io.out(display`  arguments (but its targets' spelling${r.scope.varies.length > 0 ? ' and the free fields' : ''}): ${JSON.stringify(r.scope.args)}`);
  io.out(display`  under: ${r.scope.rules.map((rule) => `${rule.id} v${rule.version}`).join(', ')}${r.scope.machine !== null ? `; machine ${r.scope.machine}` : ''}`);
  io.out(display`  signed by ${r.reviewer} approving request ${r.origin.requestId} of job ${r.origin.jobId} at ${new Date(r.createdAt).toISOString()}`);
  io.out(display`  ${String(view.used)} of ${String(r.uses)} uses taken; until ${new Date(r.until).toISOString()}`);
  if (view.revoked !== null) io.out(display`  revoked ${new Date(view.revoked.at).toISOString()} by ${view.revoked.by}: ${view.revoked.reason}`);
  for (const u of uses) io.out(display`  use ${String(u.use)}: ${u.useKey} at ${new Date(u.at).toISOString()}`);
};
