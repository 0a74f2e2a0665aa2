import { randomUUID } from 'node:crypto';
import type { ClientCallView } from '../../core/job/client-calls';
import { clientCallQuery, submitCallUpdate } from '../../workflows/messages';
import type { JobHarness } from './job-harness';

/** A client-driven job for one test (as the MCP gateway starts one for agent `requester`), and how its client submits and asks. */
export async function clientJob(h: JobHarness, options: { readonly name: string; readonly requester: string; readonly input?: { readonly historyEventLimit?: number } }) {
  const { jobId, handle } = await h.start({
    jobId: `${options.name}-${Date.now()}`,
    goal: `calls from MCP agent ${options.requester}`,
    script: { turns: [] },
    input: { driver: 'client', requester: options.requester, ...options.input },
  });
  const submit = (toolName: string, args: Record<string, unknown>, callKey = randomUUID()) => handle.executeUpdate(submitCallUpdate, { args: [{ callKey, toolName, args }] });
  const query = (callKey: string) => handle.query(clientCallQuery, { callKey });
  return { jobId, handle, submit, query };
}

/** The call's answer once the job has one (polled every 200 ms, at most `timeoutMs`). */
export async function answered(query: (key: string) => Promise<ClientCallView | null>, callKey: string, timeoutMs = 30_000): Promise<Extract<ClientCallView, { status: 'answered' }>> {
  const until = Date.now() + timeoutMs;
  while (Date.now() < until) {
    const view = await query(callKey);
    if (view?.status === 'answered') return view;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`call ${callKey} was not answered within ${timeoutMs} ms`);
}
