import type { JobHarness } from './job-harness';

/** The text of a tool result, its parts joined by newlines. */
export const textOf = (result: unknown): string => {
  const content = (result as { content?: Array<{ type: string; text?: string }> }).content ?? [];
  return content.map((c) => c.text ?? '').join('\n');
};

/** The request id and call id a "waiting for approval" answer gives. */
export function waitingIds(text: string): { requestId: string; call: string } {
  return { requestId: /request (\S+) /.exec(text)?.[1] ?? '', call: /"call": "([^"]+)"/.exec(text)?.[1] ?? '' };
}

/** The environment an `airlock mcp` process gets: the harness's namespace and data folder, its root as the tools' root (defined values only). */
export function mcpEnv(h: JobHarness): Record<string, string> {
  return Object.fromEntries(Object.entries(h.processEnv({ AIRLOCK_ROOTS: h.root })).filter((e): e is [string, string] => e[1] !== undefined));
}
