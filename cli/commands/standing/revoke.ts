import { display } from '../../../core/redaction/display-text';
import { printJson, stringOption, type CommandRun } from '../../command';
import { JobError, UsageError } from '../../../client/errors';
import { cliName } from '../../../client/cli-name';
import { reviewerName } from '../decision-output';
import { auditRevocation, withStandingStores } from './store';

/**
 * Revokes a standing approval in the store every agent worker asks: the
 * next call it would have covered asks a reviewer again. Narrowing what may
 * happen needs no signature; it is audited with who said they revoked it.
 */
export const run: CommandRun = async (args, io, command) => {
  const [id, ...rest] = args.positionals;
  if (id === undefined || rest.length > 0) throw new UsageError(`expected one standing approval id; usage: ${command.usage}`);
  const by = reviewerName(args, io);
  const reason = stringOption(args, 'reason') ?? 'revoked';
  const outcome = await withStandingStores(io.config(), async ({ standing, audit }) => {
    const answer = await standing.revoke(id, by, reason, Date.now());
    const view = await standing.get(id);
    if (answer === 'revoked' && view !== undefined) await auditRevocation(audit, { jobId: view.record.origin.jobId, standingId: id, by, reason });
    return { answer, view };
  });
  if (outcome.answer === 'unknown') throw new JobError(`no standing approval ${id} (\`${cliName(io.env)} standing list --all\` lists them)`);
  if (args.values.json === true) {
    printJson(io, { id, revoked: outcome.answer === 'revoked', already: outcome.answer === 'already', by, reason });
    return;
  }
  if (outcome.answer === 'already') io.out(display`standing approval ${id} was revoked before (${outcome.view?.revoked?.by ?? ''}: ${outcome.view?.revoked?.reason ?? ''}); nothing changed`);
  else io.out(display`revoked standing approval ${id}: the next call it would have covered asks a reviewer again`);
};
