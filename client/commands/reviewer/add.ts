import { statePaths } from '../../../host/paths';
import { ensureLocalReviewer } from '../../../host/reviewer-identity';
import { printJson, type CommandRun } from '../../command';
import { UsageError } from '../../errors';

export const run: CommandRun = async (args, io, command) => {
  const [name, ...rest] = args.positionals;
  if (name === undefined || rest.length > 0) throw new UsageError(`expected one reviewer name; usage: ${command.usage}`);
  const paths = statePaths(io.config());
  const { keyFile, created } = ensureLocalReviewer(paths, name);
  const result = { reviewer: name, created, keyFile, reviewerKeys: paths.reviewerKeys };
  if (args.values.json === true) {
    printJson(io, result);
    return;
  }
  io.out(
    created
      ? `created ${name}'s signing key ${keyFile} and listed its public key in ${paths.reviewerKeys}`
      : `${name} already has a signing key here: ${keyFile}`,
  );
  io.out('  decisions made on this machine as this reviewer are signed with it; restart the agent workers so they read the new key');
};
