import { display } from '../../../core/redaction/display-text';
import { printJson, stringOption, type CommandRun } from '../../command';
import { UsageError } from '../../../client/errors';
import { editRulesFile, rulesFileFor } from './source';

/** `enable` and `disable`: the same edit with the other value; each is its own command. */
function toggle(enabled: boolean): CommandRun {
  const name = enabled ? 'enable' : 'disable';
  return async (args, io, command) => {
    const [id, ...rest] = args.positionals;
    if (id === undefined || rest.length > 0) throw new UsageError(`expected one rule id; usage: ${command.usage}`);
    const file = rulesFileFor(io.config(), stringOption(args, 'file'));
    let version = 0;
    let changed = false;
    await editRulesFile(file, (doc, yaml) => {
      const index = doc.rules.findIndex((r) => (r as { id?: unknown }).id === id);
      if (index < 0) throw new UsageError(`no rule ${id} in ${String(file)}; see airlock rules list`);
      const rule = doc.rules[index] as { enabled?: boolean; version: number };
      version = rule.version;
      if ((rule.enabled ?? true) === enabled) return;
      changed = true;
      version = rule.version + 1;
      rule.enabled = enabled;
      rule.version = version;
      yaml?.setIn(['rules', index, 'enabled'], enabled);
      yaml?.setIn(['rules', index, 'version'], version);
    });
    if (args.values.json === true) printJson(io, { rule: id, enabled, version, changed });
    else io.out(changed ? display`rule ${id} is now ${name}d as v${version} (new jobs only)` : display`rule ${id} is already ${name}d (v${version})`);
  };
}

export const enable = toggle(true);
export const disable = toggle(false);
