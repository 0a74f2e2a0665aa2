import { z } from 'zod';
import { canonicalJson } from '../canonical-json';
import { sha256Hex } from '../sha256';
import { ruleSchema, type RulesFile } from './rules';

/**
 * The rules frozen for one job when it starts. Carried across
 * continue-as-new; rule edits affect only jobs started later.
 */
export const policySnapshotSchema = z.strictObject({
  schemaVersion: z.literal(1),
  /** Content hash of instructions + rules; recorded in audit events as the policy version. */
  version: z.string().regex(/^[0-9a-f]{64}$/),
  /** Where the rules came from (a file path, or "built-in default"). */
  source: z.string(),
  instructions: z.array(z.string()),
  rules: z.array(ruleSchema),
});
export type PolicySnapshot = z.output<typeof policySnapshotSchema>;

export function buildSnapshot(file: RulesFile, source: string): PolicySnapshot {
  const content = { instructions: file.instructions, rules: file.rules };
  return {
    schemaVersion: 1,
    version: sha256Hex(canonicalJson(content)),
    source,
    instructions: [...file.instructions],
    rules: file.rules.filter((r) => r.enabled),
  };
}

/** The short form shown to people; audit events keep the full hash. */
export function shortVersion(version: string): string {
  return version.slice(0, 12);
}
