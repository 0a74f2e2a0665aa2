import { userInfo } from 'node:os';
import type { McpConfig } from '../../core/config/tools/mcp';
import { parseDuration } from '../../core/util/duration';
import { stringOption, type CommandRun } from '../command';
import { UsageError } from '../errors';
import { packageVersion } from '../package-version';
import { untilStopped } from '../stop-signal';
import { withClient } from '../with-client';

/** SDK clients give up on a call after 60 s even while progress arrives: hold a waiting call open for less. */
const DEFAULT_WAIT_MS = 50_000;
const AGENT_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

/** Lists the upstream MCP servers' tools the tools config lends (then lets go of them: the tools worker calls them). */
async function withUpstream(mcp: McpConfig, file: string, builtIn: readonly string[]): Promise<readonly string[]> {
  const [{ UpstreamServers }, { useUpstreamTools }] = await Promise.all([import('../../host/mcp-upstream/upstream-servers'), import('../../core/tools/registry')]);
  const upstream = await UpstreamServers.connect({ config: mcp, file, version: packageVersion() });
  await upstream.close();
  useUpstreamTools(upstream.specs);
  return [...builtIn, ...upstream.specs.map((s) => s.name)];
}

export const run: CommandRun = async (args, io, command) => {
  if (args.positionals.length > 0) throw new UsageError(`mcp takes no arguments; usage: ${command.usage}`);
  const agent = stringOption(args, 'agent') ?? io.config().reviewer ?? userInfo().username;
  if (!AGENT_NAME.test(agent)) throw new UsageError(`--agent takes a name of letters, digits, ".", "_" and "-" (at most 64), got ${JSON.stringify(agent)}`);
  const waitText = stringOption(args, 'wait');
  const waitMs = waitText === undefined ? DEFAULT_WAIT_MS : parseDuration(waitText);
  if (waitMs === undefined || waitMs > 10 * 60_000) throw new UsageError(`--wait takes a duration up to 10m, for example 50s, got ${JSON.stringify(waitText)}`);
  const config = io.config();
  // The tools the tools config makes available, as the workers offer them.
  const { loadToolsSetup } = await import('../../host/tools-config-file');
  const setup = await loadToolsSetup(config);
  const tools = setup.config?.mcp === undefined ? setup.availableTools : await withUpstream(setup.config.mcp, setup.file ?? '(none)', setup.availableTools);
  const stopped = untilStopped();
  await withClient(io, async (client) => {
    const [{ createGateway, agentJobId }, { StdioServerTransport }] = await Promise.all([import('../mcp/gateway'), import('@modelcontextprotocol/sdk/server/stdio.js')]);
    const server = createGateway({ client: client.client, agent, tools, waitMs, version: packageVersion() });
    const closed = new Promise<void>((resolve) => {
      server.onclose = resolve;
      process.stdin.once('end', resolve);
    });
    await server.connect(new StdioServerTransport());
    // stdout is the protocol's: everything for people goes to stderr.
    io.err(`airlock mcp: agent ${agent}, its calls in job ${agentJobId(agent)}; serving MCP on stdin/stdout (Temporal ${config.temporal.address})`);
    await Promise.race([stopped, closed]);
    await server.close();
  });
};
