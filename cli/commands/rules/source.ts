import { open, readFile, realpath, rename, rm, stat } from 'node:fs/promises';
import { isSeq, parseDocument, parse as parseYaml, type Document } from 'yaml';
import { BUILT_IN_RULES_SOURCE, checkRuleMachines, loadPolicySnapshotFrom, parseRulesDocument, RulesFileError } from '../../../host/config/rules-file';
import type { AirlockConfig } from '../../../core/config/config';
import type { PolicySnapshot } from '../../../core/policy/snapshot';
import { statePaths } from '../../../host/config/paths';
import { loadToolsSetup, snapshotSettingsOf } from '../../../host/config/tools-config-file';
import { formatRulesFileProblem } from '../../../core/policy/rules';
import { display } from '../../../core/redaction/display-text';
import { printJson, type CommandIo } from '../../command';
import { UsageError } from '../../../client/errors';

/** The rules file a command works on: `--file`, else AIRLOCK_RULES_FILE; undefined means the built-in rules. */
export function rulesFileFor(config: AirlockConfig, fileOption: string | undefined): string | undefined {
  return fileOption ?? statePaths(config).rulesFile;
}

/** The snapshot a job started now would take, with the tools config's roots, available tools, machines and judge settings. */
export async function snapshotFor(config: AirlockConfig, file: string | undefined): Promise<PolicySnapshot> {
  const tools = await loadToolsSetup(config);
  const snapshot = await loadPolicySnapshotFrom(file, snapshotSettingsOf(config, tools));
  checkRuleMachines(snapshot, tools.machines?.map((m) => m.name));
  return snapshot;
}

export function describeSource(file: string | undefined): string {
  return file ?? BUILT_IN_RULES_SOURCE;
}

/** An invalid rules file as `rules validate` reports it: every problem, with its rule id and field. */
export function printRulesFileError(io: CommandIo, err: RulesFileError, json: boolean): void {
  if (json) {
    printJson(io, { valid: false, source: err.file, problems: err.problems });
    return;
  }
  io.out(display`invalid: ${err.file}: ${err.problems.length} problem(s)`);
  for (const p of err.problems) io.out(display`  ${formatRulesFileProblem(p)}`);
}

/**
 * Changes a rules file as a whole: the edited document is validated before
 * anything is written; the new text goes to a temporary file beside the real
 * one (same mode), is flushed to disk and renamed over it, so the file is
 * never half-written or invalid. A lock file keeps two edits from losing one
 * another. YAML comments survive.
 */
export async function editRulesFile(
  file: string | undefined,
  edit: (doc: { rules: unknown[] }, yaml: Document | undefined) => void,
): Promise<void> {
  if (file === undefined) {
    throw new UsageError('no rules file to change: set AIRLOCK_RULES_FILE or pass --file (the built-in rules are not a file; start from rules/home-server.yaml)');
  }
  const target = await realpath(file).catch(() => file);
  const lock = `${target}.lock`;
  let lockHandle;
  try {
    lockHandle = await open(lock, 'wx');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'EEXIST') {
      throw new UsageError(`${lock} exists: another rules edit is running (remove the lock file if it was left behind by a crash)`);
    }
    throw err;
  }
  try {
    const text = await readFile(target, 'utf8').catch((err: NodeJS.ErrnoException) => {
      throw new RulesFileError(file, [{ ruleId: undefined, field: '(file)', message: `cannot read it (${err.code ?? err.message})` }]);
    });
    let next: string;
    if (target.endsWith('.json')) {
      const doc = JSON.parse(text) as { rules?: unknown };
      if (!Array.isArray(doc.rules)) doc.rules = [];
      edit(doc as { rules: unknown[] }, undefined);
      next = `${JSON.stringify(doc, null, 2)}\n`;
    } else {
      const yaml = parseDocument(text);
      if (yaml.errors.length > 0) throw new RulesFileError(file, [{ ruleId: undefined, field: '(file)', message: yaml.errors[0]!.message }]);
      // `rules:` with nothing after it (or missing) becomes an empty list to add to.
      if (!isSeq(yaml.get('rules'))) yaml.set('rules', yaml.createNode([]));
      const plain = yaml.toJS() as { rules: unknown[] };
      edit(plain, yaml);
      next = yaml.toString();
    }
    parseRulesDocument(target.endsWith('.json') ? JSON.parse(next) : parseYaml(next), file);
    const { mode } = await stat(target);
    const scratch = `${target}.airlock-${process.pid}.tmp`;
    const handle = await open(scratch, 'w', mode & 0o7777);
    try {
      await handle.writeFile(next);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(scratch, target);
  } finally {
    await lockHandle.close();
    await rm(lock, { force: true });
  }
}
