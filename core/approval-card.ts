import type { PendingRequest } from './approvals';
import { summarizeArgs, truncate } from './masking';

const iso = (ms: number) => new Date(ms).toISOString();

/** The Markdown card shown as the workflow's current details in the Web UI. */
export function approvalCard(pending: readonly PendingRequest[]): string {
  if (pending.length === 0) return '';
  const lines = [`### Waiting for approval (${pending.length})`, ''];
  for (const r of pending) {
    const target = r.observed[0]?.path ?? summarizeArgs(r.args, 120);
    lines.push(
      `- **${r.toolName}** on \`${target}\``,
      `  - rule: \`${r.ruleId}\` v${r.ruleVersion} — ${truncate(r.reason, 200)}`,
      `  - request: \`${r.requestId}\`, expires ${iso(r.expiresAt)}`,
    );
  }
  lines.push('', 'Decide with `airlock approve <jobId>` or `airlock deny <jobId> --reason TEXT`.');
  return lines.join('\n');
}
