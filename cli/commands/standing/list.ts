import { display } from '../../../core/redaction/display-text';
import { printJson, type CommandRun } from '../../command';
import { UsageError } from '../../../client/errors';
import { withStandingStores } from './store';
import { coversLine, standingJson, standingState } from './text';

export const run: CommandRun = async (args, io, command) => {
  if (args.positionals.length > 0) throw new UsageError(`standing list takes no arguments; usage: ${command.usage}`);
  const all = args.values.all === true;
  const now = Date.now();
  const views = await withStandingStores(io.config(), ({ standing }) => standing.list({ all, now }));
  if (args.values.json === true) {
    printJson(io, views.map((v) => standingJson(v, now)));
    return;
  }
  if (views.length === 0) {
    io.out(all ? 'no standing approvals yet: `airlock approve JOB --also-for 7d --uses 10` makes one where a rule allows it' : 'no standing approval can be used now (`--all` lists ended ones too)');
    return;
  }
  for (const v of views) {
    const r = v.record;
    io.out(display`${r.id}  ${standingState(v, now)}  ${String(v.used)}/${String(r.uses)} used  until ${new Date(r.until).toISOString()}  by ${r.reviewer}`);
    io.out(display`  ${coversLine(v)}`);
  }
};
