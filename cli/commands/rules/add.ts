import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { display } from '../../../core/redaction/display-text';
import { printJson, stringOption, type CommandRun } from '../../command';
import { UsageError } from '../../../client/errors';
import { editRulesFile, rulesFileFor } from './source';

export const run: CommandRun = async (args, io, command) => {
  const text = stringOption(args, 'rule');
  if (text === undefined) throw new UsageError(`--rule is required; usage: ${command.usage}`);
  let rule: unknown;
  try {
    rule = parseYaml(text.startsWith('@') ? await readFile(text.slice(1), 'utf8') : text);
  } catch (err) {
    throw new UsageError(`--rule is not YAML or JSON: ${(err as Error).message.split('\n')[0]}`);
  }
  if (rule === null || typeof rule !== 'object' || Array.isArray(rule)) throw new UsageError('--rule must be one rule (a mapping)');
  const withVersion: Record<string, unknown> = { version: 1, ...(rule as Record<string, unknown>) };
  const file = rulesFileFor(io.config(), stringOption(args, 'file'));
  await editRulesFile(file, (doc, yaml) => {
    if (doc.rules.some((r) => (r as { id?: unknown }).id === withVersion.id)) {
      throw new UsageError(`rule ${String(withVersion.id)} already exists; enable, disable or edit it instead`);
    }
    doc.rules.push(withVersion);
    yaml?.addIn(['rules'], yaml.createNode(withVersion));
  });
  if (args.values.json === true) printJson(io, { added: withVersion.id, version: withVersion.version, file });
  else io.out(display`added rule ${String(withVersion.id)} v${String(withVersion.version)} to ${String(file)} (new jobs only)`);
};
