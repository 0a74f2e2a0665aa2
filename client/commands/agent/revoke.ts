import { agentNamePattern, agentNameRule } from '../../../core/job/agent-name';
import { printJson, type CommandRun } from '../../command';
import { JobError, UsageError } from '../../errors';

export const run: CommandRun = async (args, io, command) => {
  const [agent, ...rest] = args.positionals;
  if (agent === undefined || rest.length > 0) throw new UsageError(`expected one agent name; usage: ${command.usage}`);
  if (!agentNamePattern.test(agent)) throw new UsageError(`an agent name is ${agentNameRule}, got ${JSON.stringify(agent)}`);
  // The store (SQLite or PostgreSQL) loads only once the arguments are good.
  const { withAgentTokens } = await import('../../mcp/stores');
  const revoked = await withAgentTokens(io.config(), (t) => t.revoke(agent));
  if (revoked === 0) throw new JobError(`agent ${agent} has no active token (\`airlock agent list\` shows the agents)`);
  if (args.values.json === true) {
    printJson(io, { agent, revoked });
    return;
  }
  io.out(`revoked agent ${agent}'s token: \`airlock mcp --listen\` refuses it from now on; \`airlock agent add ${agent}\` makes a new one`);
};
