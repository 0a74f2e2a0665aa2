import { userInfo } from 'node:os';
import type { Client } from '@temporalio/client';
import type { GatewayOptions } from '../../servers/mcp/gateway';
import type { McpStores } from '../../servers/mcp/stores';
import { agentNamePattern, agentNameRule } from '../../core/job/agent-name';
import { parseDuration } from '../../core/util/duration';
import { stringOption, type CommandIo, type CommandRun, type ParsedArgs } from '../command';
import { UsageError } from '../../client/errors';
import { packageVersion } from '../../host/package-version';
import { untilStopped } from '../stop-signal';
import { withClient } from '../with-client';

/** SDK clients give up on a call after 60 s even while progress arrives: hold a waiting call open for less. */
const DEFAULT_WAIT_MS = 50_000;

const strings = (args: ParsedArgs, name: string): string[] => {
  const value = args.values[name];
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : typeof value === 'string' ? [value] : [];
};

/**
 * The tools the tools config makes available, as the workers offer them:
 * airlock's, then the upstream MCP servers' it lends (listed here, then let
 * go of: the tools worker calls them).
 */
async function offeredTools(io: CommandIo): Promise<readonly string[]> {
  const { loadToolsSetup, withUpstreamTools } = await import('../../host/config/tools-config-file');
  const setup = await loadToolsSetup(io.config());
  const mcp = setup.config?.mcp;
  const { offeredByDefault, useUpstreamTools } = await import('../../core/tools/registry');
  // The agent's job names no tools: it gets what a job gets by default.
  if (mcp === undefined) return offeredByDefault(setup.availableTools);
  const { UpstreamServers } = await import('../../host/mcp-upstream/upstream-servers');
  const upstream = await UpstreamServers.connect({ config: mcp, file: setup.file ?? '(none)', version: packageVersion() });
  await upstream.close();
  useUpstreamTools(upstream.specs);
  return offeredByDefault(withUpstreamTools(setup, upstream.specs).availableTools);
}

export const run: CommandRun = async (args, io, command) => {
  if (args.positionals.length > 0) throw new UsageError(`mcp takes no arguments; usage: ${command.usage}`);
  const waitText = stringOption(args, 'wait');
  const waitMs = waitText === undefined ? DEFAULT_WAIT_MS : parseDuration(waitText);
  if (waitMs === undefined || waitMs > 10 * 60_000) throw new UsageError(`--wait takes a duration up to 10m, for example 50s, got ${JSON.stringify(waitText)}`);
  const listen = stringOption(args, 'listen');
  if (listen !== undefined) return serveHttp({ io, args, listen, waitMs });
  if (args.values['allow-host'] !== undefined || args.values['allow-origin'] !== undefined) throw new UsageError('--allow-host and --allow-origin go with --listen');
  const agent = stringOption(args, 'agent') ?? io.config().reviewer ?? userInfo().username;
  if (!agentNamePattern.test(agent)) throw new UsageError(`--agent takes a name of ${agentNameRule}, got ${JSON.stringify(agent)}`);
  const config = io.config();
  await serving(io, async ({ client, onRefused, tools, stopped }) => {
    const [{ createGateway, agentJobId }, { StdioServerTransport }] = await Promise.all([import('../../servers/mcp/gateway'), import('@modelcontextprotocol/sdk/server/stdio.js')]);
    const server = createGateway({ client, agent, tools, waitMs, version: packageVersion(), onRefused });
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

/** What both transports serve with: the tools offered, the stores (tokens, audit), a Temporal client, and the stop signal; closed after `use`. */
async function serving(
  io: CommandIo,
  use: (context: { readonly client: Client; readonly stores: McpStores; readonly onRefused: GatewayOptions['onRefused']; readonly tools: readonly string[]; readonly stopped: Promise<unknown> }) => Promise<void>,
): Promise<void> {
  const tools = await offeredTools(io);
  const stopped = untilStopped();
  const [{ openMcpStores }, { callRefusalAuditor }] = await Promise.all([import('../../servers/mcp/stores'), import('../../servers/mcp/call-refusals')]);
  const stores = await openMcpStores(io.config(), 'airlock-mcp');
  try {
    const onRefused = callRefusalAuditor(stores.audit, (line) => io.err(line));
    await withClient(io, (client) => use({ client: client.client, stores, onRefused, tools, stopped }));
  } finally {
    await stores.close();
  }
}

/** `--listen`: Streamable HTTP, each request's agent named by its bearer token. */
async function serveHttp(input: { io: CommandIo; args: ParsedArgs; listen: string; waitMs: number }): Promise<void> {
  const { io, args, waitMs } = input;
  if (args.values.agent !== undefined) throw new UsageError('--agent is for stdio; over HTTP each request names its agent by its token (`airlock agent add NAME`)');
  const { parseListenAddress, allowedHosts, allowedOrigins, isLoopback } = await import('../../servers/mcp/listen-address');
  const listen = parseListenAddress(input.listen);
  const hosts = allowedHosts(listen, strings(args, 'allow-host'));
  const origins = allowedOrigins(strings(args, 'allow-origin'));
  const config = io.config();
  await serving(io, async ({ client, stores, onRefused, tools, stopped }) => {
    const [{ createGateway }, { startMcpHttpServer }] = await Promise.all([import('../../servers/mcp/gateway'), import('../../servers/mcp/http-server')]);
    const server = await startMcpHttpServer({
      listen,
      allowedHosts: hosts,
      allowedOrigins: origins,
      tokens: stores.tokens,
      audit: stores.audit,
      gatewayFor: (agent) => createGateway({ client, agent, tools, waitMs, version: packageVersion(), onRefused }),
      log: (line) => io.err(line),
    });
    io.err(`airlock mcp: serving MCP over HTTP at ${server.url} for agents with a token (\`airlock agent add NAME\`); Host ${[...hosts].join(', ')} (Temporal ${config.temporal.address})`);
    if (listen.wildcard) io.err('airlock mcp: listening on every address of this machine: clients reach it by a name given with --allow-host; put TLS in front of it (a reverse proxy) beyond a trusted network');
    else if (!isLoopback(listen.host)) io.err(`airlock mcp: listening on ${listen.host}, beyond this machine: tokens travel in clear text over plain HTTP; put TLS in front of it (a reverse proxy) beyond a trusted network`);
    if ((await stores.tokens.list()).every((t) => t.revokedAt !== null)) io.err('airlock mcp: no agent has an active token yet: `airlock agent add NAME` makes one');
    await stopped;
    await server.close();
  });
}
