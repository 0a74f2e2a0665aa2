import { display } from '../../../core/redaction/display-text';
import { printJson, type CommandRun } from '../../command';
import { UsageError } from '../../../client/errors';

export const run: CommandRun = async (args, io, command) => {
  if (args.positionals.length > 0) throw new UsageError(`agent list takes no arguments; usage: ${command.usage}`);
  // The store (SQLite or PostgreSQL) loads only once the arguments are good.
  const { withAgentTokens } = await import('../../../servers/mcp/stores');
  const tokens = await withAgentTokens(io.config(), (t) => t.list());
  if (args.values.json === true) {
    printJson(io, tokens);
    return;
  }
  if (tokens.length === 0) {
    io.out('no agents yet: `airlock agent add NAME` makes a token for one');
    return;
  }
  const rows = [
    ['AGENT', 'CREATED', 'REVOKED', 'LAST USED'],
    ...tokens.map((t) => [t.agent, t.createdAt, t.revokedAt ?? '-', t.lastUsedAt ?? 'never']),
  ];
  const widths = [0, 1, 2].map((i) => Math.max(...rows.map((r) => r[i]?.length ?? 0)));
  for (const r of rows) io.out(display`${r.map((c, i) => (i < 3 ? c.padEnd(widths[i] ?? 0) : c)).join('  ')}`);
};
