import { AirlockError } from '../../core/util/errors';
import { defaultRules } from '../../core/policy/default-rules';
import {
  formatRulesFileProblem,
  rulesFileProblems,
  rulesFileSchema,
  type RulesFile,
  type RulesFileProblem,
} from '../../core/policy/rules';
import { buildSnapshot, defaultSnapshotSettings, type PolicySnapshot, type SnapshotSettings } from '../../core/policy/snapshot';
import { readYamlFile } from './read-yaml';

export const BUILT_IN_RULES_SOURCE = 'built-in default rules';

/** A rules file is unreadable or invalid; `problems` lists every one found. */
export class RulesFileError extends AirlockError {
  override name = 'RulesFileError';
  constructor(
    readonly file: string,
    readonly problems: readonly RulesFileProblem[],
    cause?: unknown,
  ) {
    super(`rules file ${file} is invalid: ${problems.map(formatRulesFileProblem).join('; ')}`, { cause });
  }
}

/** Validates a parsed rules document as a whole: it loads completely or not at all. */
export function parseRulesDocument(raw: unknown, source: string): RulesFile {
  const result = rulesFileSchema.safeParse(raw);
  if (!result.success) throw new RulesFileError(source, rulesFileProblems(raw, result.error));
  return result.data;
}

/** YAML or JSON (JSON is YAML); the extension does not matter. */
export async function readRulesFile(file: string): Promise<RulesFile> {
  const read = await readYamlFile(file);
  if (!read.ok) throw new RulesFileError(file, [{ ruleId: undefined, field: '(file)', message: read.problem }], read.cause);
  return parseRulesDocument(read.value, file);
}

/** Where a worker's rules come from: a configured file, or the built-in defaults. */
export async function loadPolicySnapshotFrom(
  file: string | undefined,
  settings: SnapshotSettings = defaultSnapshotSettings,
): Promise<PolicySnapshot> {
  if (file === undefined) {
    return buildSnapshot(parseRulesDocument(defaultRules, BUILT_IN_RULES_SOURCE), BUILT_IN_RULES_SOURCE, settings);
  }
  return buildSnapshot(await readRulesFile(file), file, settings);
}

/**
 * A rule scoped to a machine the tools config does not list would never
 * match, silently: a typo (`nsa`) or a rule written for another setup.
 * Checked where the tools config is known (the agent worker's start, the
 * `rules` commands), so the rules file alone stays valid anywhere.
 */
export function checkRuleMachines(snapshot: PolicySnapshot, machines: readonly string[] | undefined): void {
  const problems = snapshot.rules.flatMap((rule) =>
    (rule.scope.machines ?? [])
      .filter((name) => machines === undefined || !machines.includes(name))
      .map((name) => ({
        ruleId: rule.id,
        field: 'scope.machines',
        message:
          machines === undefined
            ? `names machine ${JSON.stringify(name)}, but the tools config lists no machines (AIRLOCK_TOOLS_CONFIG, machines:)`
            : `names machine ${JSON.stringify(name)}, which the tools config does not list (it lists ${machines.join(', ')})`,
      })),
  );
  if (problems.length > 0) throw new RulesFileError(snapshot.source, problems);
}
