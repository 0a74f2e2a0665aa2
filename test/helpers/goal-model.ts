import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One tool call the model proposes. */
export interface ProposedCall {
  readonly name: string;
  readonly arguments: Record<string, unknown>;
}

/**
 * What the model answers for one job: the calls of a turn (a function of
 * the job's marker in the goal, and of how many turns it has had), or
 * nothing more to do.
 */
export type GoalScript = (job: string, turn: number) => readonly ProposedCall[];

export interface GoalModel {
  readonly baseUrl: string;
  /** The tool results each job's latest request carried, in call order (what the model was told). */
  readonly toolResults: Map<string, string[]>;
  close(): Promise<void>;
}

const MARKER = /\[job:([A-Za-z0-9_.-]+)\]/;

/** The marker `startGoalModel` reads a job from: put it in the goal. */
export const goalMarker = (job: string) => `[job:${job}]`;

function body(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/**
 * An OpenAI-compatible chat completions server for tests that run many
 * jobs at once, each with calls of its own: the real `openai` client of
 * the agent workers talks to it over HTTP. The job is read from a marker
 * in the goal, the turn from the assistant messages so far, as the
 * project's replay server does for one script.
 */
export async function startGoalModel(script: GoalScript): Promise<GoalModel> {
  const toolResults = new Map<string, string[]>();
  const server: Server = createServer((req, res) => {
    void body(req).then((text) => {
      const request = JSON.parse(text) as { model?: string; messages: Array<{ role: string; content?: unknown }> };
      const job = request.messages.map((m) => (typeof m.content === 'string' ? MARKER.exec(m.content)?.[1] : undefined)).find((j) => j !== undefined) ?? 'unknown';
      const turn = request.messages.filter((m) => m.role === 'assistant').length;
      const results = request.messages.filter((m) => m.role === 'tool').map((m) => (typeof m.content === 'string' ? m.content : JSON.stringify(m.content)));
      if (results.length > 0) toolResults.set(job, results);
      const calls = script(job, turn).map((c, i) => ({ id: `call_${turn}_${i}`, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments) } }));
      const answer = JSON.stringify({
        id: `chatcmpl-${job}-${turn}`,
        object: 'chat.completion',
        created: 0,
        model: request.model ?? 'goal-model',
        choices: [{ index: 0, message: { role: 'assistant', content: calls.length > 0 ? null : 'nothing more to do', ...(calls.length > 0 ? { tool_calls: calls } : {}) }, finish_reason: calls.length > 0 ? 'tool_calls' : 'stop', logprobs: null }],
        usage: { prompt_tokens: 0, completion_tokens: 0, total_tokens: 0 },
      });
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(answer) }).end(answer);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`,
    toolResults,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
