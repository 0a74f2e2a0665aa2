import { z } from 'zod';
import { canonicalJson } from '../util/canonical-json';
import { sha256Hex } from '../util/sha256';
import { JUDGE_SCHEMA_VERSION } from '../judge/judge';
import { ruleSchema, type RulesFile } from './rules';
import { machineTableSchema, type MachineTable } from '../tools/machines';
import { upstreamToolSpecSchema, type UpstreamToolSpec } from '../tools/upstream/upstream-spec';

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
  detectors: z.strictObject({
    roots: z.array(z.string()),
    allowedHosts: z.array(z.string()),
    deniedCommands: z.array(z.string()),
  }),
  /**
   * The tools the workers' tools config can run, fixed for the job: the
   * others are never offered and are refused if called. Absent in
   * snapshots from before (and without a config): every registered tool.
   */
  tools: z
    .strictObject({
      available: z.array(z.string()),
      /** The upstream MCP servers' tools among them, as listed when the job started (absent: none). */
      upstream: z.array(upstreamToolSpecSchema).optional(),
    })
    .optional(),
  /**
   * Which machine owns which roots, services, commands and hosts, when the
   * tools config lists several: each call runs on its owner's tools queue.
   * Absent: one machine, the plain tools queue.
   */
  machines: machineTableSchema.optional(),
  /**
   * Where people decide, from the agent worker's configuration (never from
   * a client): the Web UI card links each request to the approval page.
   * Absent: no approval page configured (and in snapshots from before).
   */
  links: z.strictObject({ approvalPage: z.string().url().max(2000) }).optional(),
  /** Judge settings fixed for the job: a model change only affects later jobs. */
  judge: z.strictObject({
    model: z.string(),
    timeoutMs: z.number().int().positive(),
    schemaVersion: z.number().int(),
  }),
});
export type PolicySnapshot = z.output<typeof policySnapshotSchema>;

/** Settings that come from the worker's configuration rather than the rules file. */
export interface SnapshotSettings {
  /** The tools' roots, for the `outside_roots` detector. */
  readonly roots: readonly string[];
  readonly judgeModel: string;
  readonly judgeTimeoutMs: number;
  /** The tools the tools config can run; unset: every registered tool. */
  readonly availableTools?: readonly string[];
  /** The upstream MCP servers' tools the tools config lends (their names are in `availableTools` too). */
  readonly upstreamTools?: readonly UpstreamToolSpec[];
  /** The tools config's machines; unset: one machine. */
  readonly machines?: MachineTable;
  /** The approval page's public URL (`AIRLOCK_APPROVAL_PAGE_URL`); unset: none. */
  readonly approvalPageUrl?: string;
}

export const defaultSnapshotSettings: SnapshotSettings = { roots: [], judgeModel: 'unset', judgeTimeoutMs: 3000 };

export function buildSnapshot(file: RulesFile, source: string, settings: SnapshotSettings = defaultSnapshotSettings): PolicySnapshot {
  const detectors = { roots: [...settings.roots], ...file.detectors };
  const judge = { model: settings.judgeModel, timeoutMs: settings.judgeTimeoutMs, schemaVersion: JUDGE_SCHEMA_VERSION };
  const content = { instructions: file.instructions, rules: file.rules, detectors, judge };
  return {
    schemaVersion: 1,
    version: sha256Hex(canonicalJson(content)),
    source,
    instructions: [...file.instructions],
    rules: file.rules.filter((r) => r.enabled),
    detectors,
    // Not part of `version`: that names the rules; this is what the machine offers.
    ...(settings.availableTools !== undefined
      ? { tools: { available: [...settings.availableTools], ...(settings.upstreamTools !== undefined && settings.upstreamTools.length > 0 ? { upstream: [...settings.upstreamTools] } : {}) } }
      : {}),
    ...(settings.machines !== undefined ? { machines: settings.machines.map((m) => ({ ...m })) } : {}),
    ...(settings.approvalPageUrl !== undefined ? { links: { approvalPage: settings.approvalPageUrl } } : {}),
    judge,
  };
}

/** The short form shown to people; audit events keep the full hash. */
export function shortVersion(version: string): string {
  return version.slice(0, 12);
}
