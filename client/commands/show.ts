import type { AgentJobStateView, PendingRequestView } from '../../core/job-view';
import { defineCommand, jobIdArg, printJson, type CommandIo } from '../command';
import { withClient } from '../with-client';

export function printRequest(io: CommandIo, r: PendingRequestView, indent = '  '): void {
  io.out(`${indent}request ${r.requestId}: ${r.toolName} ${JSON.stringify(r.args)}`);
  io.out(`${indent}  rule ${r.ruleId} v${r.ruleVersion}: ${r.reason}`);
  for (const o of r.observed) {
    io.out(
      `${indent}  target ${o.path}: ${
        o.exists
          ? `${o.type}, ${o.size} bytes, mode ${o.mode}${o.sha256 !== null ? `, sha256 ${o.sha256.slice(0, 16)}…` : ''}${o.entries !== null ? `, ${o.entries} entries` : ''}`
          : 'does not exist'
      }`,
    );
  }
  if (r.editable.length > 0) io.out(`${indent}  editable: ${r.editable.join(', ')}`);
  io.out(`${indent}  fingerprint ${r.fingerprint}`);
  io.out(`${indent}  expires ${r.expiresAt}`);
}

function printState(io: CommandIo, s: AgentJobStateView): void {
  io.out(`job ${s.jobId}: ${s.status} (turn ${s.turns}/${s.maxTurns})`);
  io.out(`  goal: ${s.goal}`);
  if (s.policyVersion !== undefined) io.out(`  policy ${s.policyVersion.slice(0, 12)}`);
  if (s.result !== null) {
    io.out(`  result: ${s.result.status}${s.result.reason !== undefined ? ` (${s.result.reason})` : ''}${s.result.summary !== undefined ? ` — ${s.result.summary}` : ''}`);
  }
  if (s.pending.length > 0) {
    io.out(`  waiting for ${s.pending.length} decision(s):`);
    for (const r of s.pending) printRequest(io, r, '    ');
  }
  for (const d of s.decided.slice(-10)) {
    io.out(`  ${d.status} ${d.toolName} (request ${d.requestId})${d.reviewer !== null ? ` by ${d.reviewer}` : ''}${d.reason !== null ? `: ${d.reason}` : ''}`);
  }
  const c = s.counters;
  io.out(`  executed ${c.toolCallsExecuted} call(s), ${c.approvalRequests} approval request(s), ${c.rejectedDecisions} rejected decision(s)`);
}

export const showCommand = defineCommand({
  name: 'show',
  summary: "Show a job's status, pending requests and counters",
  usage: 'airlock show JOB_ID [--json]',
  options: { json: { type: 'boolean' } },
  async run(args, io) {
    const jobId = jobIdArg(this, args);
    const state = await withClient(io, (client) => client.state(jobId));
    if (args.values.json === true) printJson(io, state);
    else printState(io, state);
  },
});
