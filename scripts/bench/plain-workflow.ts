import { ApplicationFailure, condition, defineUpdate, proxyActivities, proxyLocalActivities, setHandler } from '@temporalio/workflow';
import type { ChatMessage } from '../../core/model/chat';
import type { PlainActivities } from './plain-worker';

/**
 * The bench's baseline: the same model turns and the same tool code as an
 * airlock job, in a plain Temporal workflow with no policy, no approvals,
 * no grants and no audit. The calls of a batch run together and their
 * results are added in call order, as airlock runs a batch of reads (the
 * bench's batches hold only reads). Bench-only; bundled by `plain-worker.ts`.
 */

export const PLAIN_WORKFLOW = 'plainAgent';

export interface PlainAgentInput {
  readonly goal: string;
  readonly toolNames: readonly string[];
  readonly maxTurns: number;
}

// The same timeouts and retries as airlock's model and tool activities.
const model = proxyActivities<PlainActivities>({ startToCloseTimeout: '3 minutes', retry: { initialInterval: '2 seconds', maximumAttempts: 5 } });
const tools = proxyActivities<PlainActivities>({ startToCloseTimeout: '10 minutes', retry: { initialInterval: '2 seconds', maximumAttempts: 10 } });

export async function plainAgent(input: PlainAgentInput): Promise<{ turns: number }> {
  const messages: ChatMessage[] = [
    { role: 'system', content: 'You are a file assistant. Call complete when done.' },
    { role: 'user', content: input.goal },
  ];
  for (let turn = 1; turn <= input.maxTurns; turn++) {
    const { message } = await model.modelTurn({ messages, toolNames: input.toolNames });
    messages.push(message);
    if (message.toolCalls.length === 0) {
      messages.push({ role: 'user', content: 'Use a tool, or call complete.' });
      continue;
    }
    const done = message.toolCalls.some((call) => call.name === 'complete');
    const outputs = await Promise.all(
      message.toolCalls.map(async (call) => (call.name === 'complete' ? 'accepted' : (await tools.plainTool({ name: call.name, arguments: call.arguments })).output)),
    );
    message.toolCalls.forEach((call, i) => messages.push({ role: 'tool', toolCallId: call.id, content: outputs[i] ?? '' }));
    if (done) return { turns: turn };
  }
  throw ApplicationFailure.nonRetryable(`no completion within ${input.maxTurns} turns`);
}

export const PLAIN_NOOPS_WORKFLOW = 'plainNoops';

// The floor of a Temporal activity here: no-ops, one after another (the `floor` part).
const noops = proxyActivities<PlainActivities>({ startToCloseTimeout: '1 minute' });
const localNoops = proxyLocalActivities<PlainActivities>({ startToCloseTimeout: '1 minute' });

/** `count` no-op activities (local ones with `local`) one after another; none with 0. */
export async function plainNoops(count: number, local: boolean): Promise<void> {
  const run = local ? localNoops : noops;
  for (let i = 0; i < count; i++) await run.plainNoop();
}

export const PLAIN_PARKED_WORKFLOW = 'plainParked';
/** A decision, plainly: `approve` or anything else (deny). */
export const plainDecideUpdate = defineUpdate<'approved' | 'denied', [string]>('plainDecide');

/**
 * Parks until an update decides, then deletes `path` with the tool code
 * airlock's tools worker runs, in one activity: the floor under airlock's
 * decide → effect (the `approval` part), with no revalidation, grant,
 * audit, memo or search attributes.
 */
export async function plainParked(path: string): Promise<void> {
  let decision: string | undefined;
  setHandler(plainDecideUpdate, (given) => {
    decision = given;
    return given === 'approve' ? 'approved' : 'denied';
  });
  await condition(() => decision !== undefined);
  if (decision === 'approve') await tools.plainTool({ name: 'fs_delete', arguments: JSON.stringify({ path }) });
}
