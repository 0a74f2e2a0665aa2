import { RulesFileError } from '../../../host/config/rules-file';
import { display } from '../../../core/redaction/display-text';
import { printJson, type CommandRun } from '../../command';
import { UsageError } from '../../../client/errors';
import { describeSource, printRulesFileError, rulesFileFor, snapshotFor } from './source';

export const run: CommandRun = async (args, io, command) => {
  if (args.positionals.length > 1) throw new UsageError(`validate takes at most one file; usage: ${command.usage}`);
  const file = rulesFileFor(io.config(), args.positionals[0]);
  try {
    const snapshot = await snapshotFor(io.config(), file);
    if (args.values.json === true) printJson(io, { valid: true, source: describeSource(file), rules: snapshot.rules.length, policyVersion: snapshot.version });
    else io.out(display`valid: ${describeSource(file)}: ${snapshot.rules.length} enabled rule(s), policy ${snapshot.version.slice(0, 12)}`);
    return 0;
  } catch (err) {
    if (!(err instanceof RulesFileError)) throw err;
    printRulesFileError(io, err, args.values.json === true);
    return 1;
  }
};
