import { agentNamePattern, agentNameRule } from '../../../core/job/agent-name';
import { printJson, type CommandRun } from '../../command';
import { UsageError } from '../../../client/errors';

export const run: CommandRun = async (args, io, command) => {
  const [agent, ...rest] = args.positionals;
  if (agent === undefined || rest.length > 0) throw new UsageError(`expected one agent name; usage: ${command.usage}`);
  if (!agentNamePattern.test(agent)) throw new UsageError(`an agent name is ${agentNameRule}, got ${JSON.stringify(agent)}`);
  // The store (SQLite or PostgreSQL) loads only once the arguments are good.
  const { withAgentTokens } = await import('../../../servers/mcp/stores');
  const { token, createdAt } = await withAgentTokens(io.config(), (t) => t.add(agent));
  const job = `mcp-${agent}`;
  if (args.values.json === true) {
    printJson(io, { agent, token, createdAt, job });
    return;
  }
  // Shown this once: only its hash is kept.
  io.out(`token for agent ${agent} (shown once; airlock keeps only its hash):`);
  io.out(`  ${token}`);
  io.out(`  an MCP client sends it to \`airlock mcp --listen\` as the header Authorization: Bearer <token>; its calls go to job ${job}`);
};
