import type { PendingRequest } from './approvals';
import { maskPreview, summarizeArgs } from './masking';
import { describeObserved, observedSubject } from './observed-state';

const iso = (ms: number) => new Date(ms).toISOString();

/** The Markdown card shown as the workflow's current details in the Web UI. */
export function approvalCard(pending: readonly PendingRequest[]): string {
  if (pending.length === 0) return '';
  const lines = [`### Waiting for approval (${pending.length})`, ''];
  for (const r of pending) {
    // Everything shown is masked: a file name or a reason can carry a secret too.
    const target = r.observed[0] === undefined ? summarizeArgs(r.args, 120) : maskPreview(observedSubject(r.observed[0]), 200);
    lines.push(
      `- **${r.toolName}** on \`${target}\``,
      ...r.observed.map((o) => `  - target \`${maskPreview(observedSubject(o), 200)}\`: ${describeObserved(o)}`),
      `  - rule: \`${r.ruleId}\` v${r.ruleVersion} — ${maskPreview(r.reason, 200)}`,
      `  - request: \`${r.requestId}\`, expires ${iso(r.expiresAt)}`,
    );
  }
  lines.push('', 'Decide with `airlock approve <jobId>` or `airlock deny <jobId> --reason TEXT`.');
  return lines.join('\n');
}
