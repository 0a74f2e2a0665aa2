import type { PendingRequest } from './approvals';
import { maskString, maskValue, truncate } from './masking';
import { describeObserved } from './observed-state';

const iso = (ms: number) => new Date(ms).toISOString();

/** The Markdown card shown as the workflow's current details in the Web UI. */
export function approvalCard(pending: readonly PendingRequest[]): string {
  if (pending.length === 0) return '';
  const lines = [`### Waiting for approval (${pending.length})`, ''];
  for (const r of pending) {
    // Everything shown is masked: a file name or a reason can carry a secret too.
    const target = r.observed[0] === undefined ? truncate(JSON.stringify(maskValue(r.args)), 120) : maskString(truncate(r.observed[0].path, 200));
    lines.push(
      `- **${r.toolName}** on \`${target}\``,
      ...r.observed.map((o) => `  - target \`${maskString(truncate(o.path, 200))}\`: ${describeObserved(o)}`),
      `  - rule: \`${r.ruleId}\` v${r.ruleVersion} — ${maskString(truncate(r.reason, 200))}`,
      `  - request: \`${r.requestId}\`, expires ${iso(r.expiresAt)}`,
    );
  }
  lines.push('', 'Decide with `airlock approve <jobId>` or `airlock deny <jobId> --reason TEXT`.');
  return lines.join('\n');
}
