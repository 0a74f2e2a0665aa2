import { writeFileSync } from 'node:fs';
import { defaultRules } from '../../core/policy/default-rules';

/**
 * Rules the bench's jobs run under. Each job snapshots the rules file when
 * it starts, so rewriting the file between (sequential) jobs switches the
 * rules without restarting the workers.
 */
export const rulePresets = {
  /** The product's default rules, written out as a file. */
  builtIn: defaultRules,
  /** The default rules, with the bench's local HTTP server among the hosts outbound calls may reach without approval. */
  builtInLocalHost: { ...defaultRules, detectors: { allowedHosts: ['127.0.0.1'] } },
  /** No rules at all: every known tool call is allowed. */
  none: { version: 1, rules: [] },
  /** Plain approvals (no signature), for benches that approve from code or the CLI. */
  approvals: {
    version: 1,
    rules: [
      { id: 'bench-approve-deletes', version: 1, name: 'Deletes wait for approval', scope: { categories: ['delete'] }, action: 'request_approval' },
      { id: 'bench-approve-chmod', version: 1, name: 'Mode changes wait for approval', scope: { tools: ['fs_chmod'] }, action: 'request_approval' },
    ],
  },
  /** Writes wait for approval: jobs parked on a write, for what a reviewer's query shows of it. */
  approveWrites: {
    version: 1,
    rules: [{ id: 'bench-approve-writes', version: 1, name: 'Writes wait for approval', scope: { tools: ['fs_write'] }, action: 'request_approval' }],
  },
} as const;

export type RulePreset = keyof typeof rulePresets;

/** JSON is YAML: the worker reads it as a rules file. */
export function writeRules(file: string, preset: RulePreset): void {
  writeFileSync(file, `${JSON.stringify(rulePresets[preset], null, 2)}\n`);
}
