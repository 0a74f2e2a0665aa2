import { z } from 'zod';

/**
 * What the tools side sees of one target before policy decides: the real
 * place behind the path (symbolic links resolved), whether a link is on
 * the way, and what is there now. Policy runs on the agent worker, which
 * may not see the tools' file system.
 */
export const targetFactSchema = z.strictObject({
  /** The target as the call names it (canonical spelling). */
  path: z.string(),
  /** Where it really is, links resolved (for a missing target: its real parent and its name); null when unresolvable. */
  real: z.string().nullable(),
  exists: z.boolean(),
  /** Some component of the path, the last one included, is a symbolic link. */
  symlink: z.boolean(),
  type: z.enum(['file', 'directory', 'symlink', 'other']).optional(),
  /** Permission bits, octal. */
  mode: z.string().optional(),
  size: z.number().optional(),
  /** Names the file has, when more than one (hard links). */
  links: z.number().int().optional(),
});
export type TargetFact = z.infer<typeof targetFactSchema>;

/** Facts of one call's targets. A target without a fact is unknown, and detectors then assume the worst. */
export const callFactsSchema = z.strictObject({
  targets: z.array(targetFactSchema),
  /**
   * For a command: what each program it starts is called on the tools
   * machine (its real name and other names of the same file; a wrapper's
   * wrapped program too), for deny lists that match the program, not the
   * spelling. Absent for other calls.
   */
  programs: z.array(z.strictObject({ command: z.string(), names: z.array(z.string()) })).optional(),
});
export type CallFacts = z.infer<typeof callFactsSchema>;

export function factOf(facts: CallFacts | undefined, target: string): TargetFact | undefined {
  return facts?.targets.find((t) => t.path === target);
}
