import { agentNamePattern, agentNameRule } from '../../../core/job/agent-name';
import { display } from '../../../core/redaction/display-text';
import { cliName } from '../../../client/cli-name';
import { printJson, type CommandRun } from '../../command';
import { JobError, UsageError } from '../../../client/errors';
import { withClient } from '../../with-client';
import { reviewerName } from '../decision-output';

/**
 * Revokes an agent's token, then withdraws the requests its job left
 * waiting (unless `--keep-requests`): a request an agent that is no longer
 * trusted made must not be approved by a reviewer who did not notice. The
 * token goes first, so a Temporal that cannot be reached never keeps it
 * valid; running the command again withdraws what is left.
 */
export const run: CommandRun = async (args, io, command) => {
  const [agent, ...rest] = args.positionals;
  if (agent === undefined || rest.length > 0) throw new UsageError(`expected one agent name; usage: ${command.usage}`);
  if (!agentNamePattern.test(agent)) throw new UsageError(`an agent name is ${agentNameRule}, got ${JSON.stringify(agent)}`);
  const keep = args.values['keep-requests'] === true;
  // The store (SQLite or PostgreSQL) loads only once the arguments are good.
  const { withAgentTokens } = await import('../../../servers/mcp/stores');
  const revoked = await withAgentTokens(io.config(), (t) => t.revoke(agent));
  const job = `mcp-${agent}`;
  const json = args.values.json === true;
  if (keep) {
    if (revoked === 0) throw new JobError(`agent ${agent} has no active token (\`${cliName(io.env)} agent list\` shows the agents)`);
    if (json) printJson(io, { agent, revoked, job, withdrawn: null });
    else io.out(`revoked agent ${agent}'s token: \`airlock mcp --listen\` refuses it from now on; its waiting requests in job ${job} stay with their reviewers; \`${cliName(io.env)} agent add ${agent}\` makes a new one`);
    return;
  }
  if (revoked > 0 && !json) io.out(`revoked agent ${agent}'s token: \`airlock mcp --listen\` refuses it from now on; \`${cliName(io.env)} agent add ${agent}\` makes a new one`);
  const by = reviewerName(args, io);
  const outcome = await withClient(io, (airlock) => airlock.withdrawRequests(job, { by, reason: `withdrawn: agent ${agent}'s token was revoked` }));
  if (outcome.kind === 'not_taken') {
    throw new JobError(`${revoked > 0 ? `agent ${agent}'s token is revoked, but` : 'nothing was revoked, and'} its waiting requests in job ${job} were not withdrawn (${outcome.reason}); they stay approvable: run \`${cliName(io.env)} agent revoke ${agent}\` again once an agent worker runs`);
  }
  const withdrawn = outcome.kind === 'withdrawn' ? outcome.requestIds : [];
  const calls = outcome.kind === 'withdrawn' ? outcome.callKeys : [];
  if (revoked === 0 && withdrawn.length === 0 && calls.length === 0) throw new JobError(`agent ${agent} has no active token and nothing of job ${job} waits (\`${cliName(io.env)} agent list\` shows the agents)`);
  if (json) {
    printJson(io, { agent, revoked, job, withdrawn, calls });
    return;
  }
  if (withdrawn.length === 0 && calls.length === 0) io.out(`nothing of job ${job} waited for a decision`);
  if (withdrawn.length > 0) io.out(display`withdrew ${String(withdrawn.length)} waiting ${withdrawn.length === 1 ? 'request' : 'requests'} of job ${job} (${withdrawn.join(', ')}): not run, and answered so`);
  if (calls.length > 0) io.out(display`withdrew ${String(calls.length)} ${calls.length === 1 ? 'call' : 'calls'} the agent had sent and no reviewer was asked about yet (${calls.join(', ')}): not run, and answered so`);
};
