import { RulesFileError } from '../../../host/rules-file';
import { formatRulesFileProblem } from '../../../core/policy/rules';
import { display } from '../../../core/display-text';
import { printJson, type CommandRun } from '../../command';
import { UsageError } from '../../errors';
import { describeSource, rulesFileFor, snapshotFor } from '../../rules-source';

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
    if (args.values.json === true) printJson(io, { valid: false, source: err.file, problems: err.problems });
    else {
      io.out(display`invalid: ${err.file}: ${err.problems.length} problem(s)`);
      for (const p of err.problems) io.out(display`  ${formatRulesFileProblem(p)}`);
    }
    return 1;
  }
};
