import { readFile, rename, writeFile } from 'node:fs/promises';
import { parseDocument, parse as parseYaml, type Document } from 'yaml';
import { BUILT_IN_RULES_SOURCE, loadPolicySnapshotFrom, parseRulesDocument, RulesFileError } from '../activities/rules-file';
import type { AirlockConfig } from '../core/config';
import type { PolicySnapshot } from '../core/policy/snapshot';
import { statePaths } from '../workers/paths';
import { UsageError } from './errors';

/** The rules file a command works on: `--file`, else AIRLOCK_RULES_FILE; undefined means the built-in rules. */
export function rulesFileFor(config: AirlockConfig, fileOption: string | undefined): string | undefined {
  return fileOption ?? statePaths(config).rulesFile;
}

/** The snapshot a job started now would take, with this machine's roots and judge settings. */
export async function snapshotFor(config: AirlockConfig, file: string | undefined): Promise<PolicySnapshot> {
  return loadPolicySnapshotFrom(file, { roots: statePaths(config).roots, judgeModel: config.judge.model, judgeTimeoutMs: config.judge.timeoutMs });
}

export function describeSource(file: string | undefined): string {
  return file ?? BUILT_IN_RULES_SOURCE;
}

/**
 * Changes a rules file as a whole: the edited document is validated before
 * anything is written, and written by rename, so the file is never left
 * half-changed or invalid. YAML comments survive.
 */
export async function editRulesFile(file: string | undefined, edit: (doc: { rules: unknown[] }, yaml: Document | undefined) => void): Promise<void> {
  if (file === undefined) {
    throw new UsageError('no rules file to change: set AIRLOCK_RULES_FILE or pass --file (the built-in rules are not a file; start from rules/home-server.yaml)');
  }
  const text = await readFile(file, 'utf8').catch((err: NodeJS.ErrnoException) => {
    throw new RulesFileError(file, [{ ruleId: undefined, field: '(file)', message: `cannot read it (${err.code ?? err.message})` }]);
  });
  let next: string;
  if (file.endsWith('.json')) {
    const doc = JSON.parse(text) as { rules?: unknown[] };
    doc.rules ??= [];
    edit(doc as { rules: unknown[] }, undefined);
    next = `${JSON.stringify(doc, null, 2)}\n`;
  } else {
    const yaml = parseDocument(text);
    const plain = (yaml.toJS() ?? {}) as { rules?: unknown[] };
    plain.rules ??= [];
    edit(plain as { rules: unknown[] }, yaml);
    next = yaml.toString();
  }
  parseRulesDocument(file.endsWith('.json') ? JSON.parse(next) : parseYaml(next), file);
  const scratch = `${file}.airlock-${process.pid}.tmp`;
  await writeFile(scratch, next);
  await rename(scratch, file);
}
