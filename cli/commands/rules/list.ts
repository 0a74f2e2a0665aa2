import { display } from '../../../core/redaction/display-text';
import { printJson, stringOption, type CommandRun } from '../../command';
import { describeSource, rulesFileFor, snapshotFor } from './source';

export const run: CommandRun = async (args, io) => {
  const file = rulesFileFor(io.config(), stringOption(args, 'file'));
  const snapshot = await snapshotFor(io.config(), file);
  if (args.values.json === true) {
    printJson(io, { source: describeSource(file), policyVersion: snapshot.version, instructions: snapshot.instructions, rules: snapshot.rules });
    return;
  }
  io.out(display`${describeSource(file)}: ${snapshot.rules.length} enabled rule(s), policy ${snapshot.version.slice(0, 12)}`);
  for (const r of snapshot.rules) {
    const scope = [
      r.scope.tools && `tools ${r.scope.tools.join(',')}`,
      r.scope.categories && `categories ${r.scope.categories.join(',')}`,
      r.scope.piece && `piece ${r.scope.piece.join(',')}`,
      r.scope.movement && `movement ${r.scope.movement.join(',')}`,
    ].filter(Boolean);
    const flags = [r.shadow && 'shadow', r.condition !== undefined && (r.enforceJudge ? 'judge: enforced' : 'judge: shadow'), r.when !== undefined && 'when']
      .filter(Boolean)
      .join(', ');
    io.out(display`  ${r.id} v${r.version}  ${r.point}  ${r.action}  ${scope.join('; ') || 'all calls'}${flags === '' ? '' : `  (${flags})`}`);
  }
};
