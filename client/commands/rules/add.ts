import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { display } from '../../../core/display-text';
import { defineCommand, printJson, stringOption } from '../../command';
import { UsageError } from '../../errors';
import { editRulesFile, rulesFileFor } from '../../rules-source';

export const rulesAddCommand = defineCommand({
  name: 'add',
  summary: 'Add a rule (YAML or JSON, inline or @file) to the rules file; running jobs keep their snapshot',
  usage: "airlock rules add --rule '{id: x, name: ..., action: audit_only}' | --rule @rule.yaml [--file FILE] [--json]",
  options: { rule: { type: 'string' }, file: { type: 'string' }, json: { type: 'boolean' } },
  async run(args, io) {
    const text = stringOption(args, 'rule');
    if (text === undefined) throw new UsageError(`--rule is required; usage: ${this.usage}`);
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
  },
});
