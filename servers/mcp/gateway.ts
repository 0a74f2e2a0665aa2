import { randomUUID } from 'node:crypto';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { CallToolRequestSchema, ErrorCode, ListToolsRequestSchema, McpError, type CallToolResult, type CreateTaskResult } from '@modelcontextprotocol/sdk/types.js';
import { WithStartWorkflowOperation, WorkflowUpdateFailedError, type Client } from '@temporalio/client';
import type { ClientCallView } from '../../core/job/client-calls';
import { AGENT_JOB_WORKFLOW, type AgentJobInput } from '../../core/job/job-input';
import { describeError } from '../../core/temporal/describe-error';
import { TaskQueues } from '../../core/temporal/task-queues';
import { PENDING_MEMO_KEY, pendingMemo } from '../../core/reviewer/pending-memo';
import { clientCallQuery, clientCallsQuery, submitCallUpdate } from '../../workflows/messages';
import { agentJobId } from './agent-job';
import { mcpTools, STATUS_TOOL, WAIT_TOOL } from './mcp-tools';
import { AirlockTaskStore, taskCallKey } from './task-store';

/**
 * `airlock mcp`: an MCP server whose tools are airlock's, and whose every
 * call goes through an airlock job — one job per agent (`mcp-<agent>`),
 * driven by the client instead of a model, so its approvals are the same
 * durable requests, decided from the CLI, the page or a phone. An allowed
 * call answers at once; a call that needs a person is held open (with
 * progress notifications) up to `waitMs`, then answered "waiting" with a
 * call id for `airlock_wait`. A denial is the tool's result with the
 * reviewer's reason (`isError`), never a protocol error. A client that
 * speaks MCP Tasks sends `task` with the call and gets a task at once,
 * which the job keeps (`task-store.ts`).
 */

export interface GatewayOptions {
  readonly client: Client;
  /** The agent's name: the job's requester, which rules match and cards show. */
  readonly agent: string;
  /** The tools the tools config makes available. */
  readonly tools: readonly string[];
  /** How long a call that waits for a person is held open (below the 60 s at which SDK clients give up). */
  readonly waitMs: number;
  readonly pollMs?: number;
  readonly version: string;
  /**
   * A call the job refused before its gate (unknown tool, invalid
   * arguments): such an update leaves no history, so the gateway says so
   * for the audit log. Never throws.
   */
  readonly onRefused?: (refusal: { readonly agent: string; readonly toolName: string; readonly reason: string }) => void;
}

export { agentJobId };

const MODEL_IMMEDIATE_RESPONSE = 'io.modelcontextprotocol/model-immediate-response';

const text = (t: string, isError = false): CallToolResult => ({ content: [{ type: 'text', text: t }], ...(isError ? { isError: true } : {}) });

function waitingText(view: Extract<ClientCallView, { status: 'parked' }>): string {
  return [
    `Waiting for approval: request ${view.requestId} (rule ${view.ruleId}). A person decides it; nothing ran yet.`,
    `Call ${WAIT_TOOL} with {"call": "${view.callKey}"} to get the result once it is decided.`,
  ].join('\n');
}

function resultOf(view: ClientCallView): CallToolResult {
  return view.status === 'answered' ? text(view.text, view.isError) : text(waitingText(view));
}

export function createGateway(options: GatewayOptions): Server {
  const { client, agent } = options;
  const jobId = agentJobId(agent);
  const pollMs = options.pollMs ?? 1_000;
  /** Why the job refused a call before its gate, told to the audit log as well. */
  const refused = (toolName: string, err: WorkflowUpdateFailedError): string => {
    const reason = err.cause instanceof Error ? err.cause.message : err.message;
    options.onRefused?.({ agent, toolName, reason });
    return reason;
  };
  const taskStore = new AirlockTaskStore({ client, agent });
  // The SDK serves tasks/get, tasks/result, tasks/list and tasks/cancel from the store.
  const server = new Server(
    { name: 'airlock', version: options.version },
    { capabilities: { tools: {}, tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } }, taskStore },
  );
  const tools = mcpTools(options.tools);

  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: tools.map((t) => ({ ...t, inputSchema: { ...t.inputSchema } })) }));

  const input: AgentJobInput = { schemaVersion: 1, goal: `Calls from MCP agent ${agent}`, requester: agent, driver: 'client' };
  const submit = (callKey: string, toolName: string, args: Record<string, unknown>) =>
    client.workflow.executeUpdateWithStart(submitCallUpdate, {
      args: [{ callKey, toolName, args }],
      updateId: callKey,
      startWorkflowOperation: new WithStartWorkflowOperation(AGENT_JOB_WORKFLOW, {
        workflowId: jobId,
        taskQueue: TaskQueues.agent,
        workflowIdConflictPolicy: 'USE_EXISTING',
        args: [input],
        memo: { [PENDING_MEMO_KEY]: pendingMemo({ goal: input.goal }) },
        staticSummary: `airlock MCP calls of agent ${agent}`,
      }),
    });

  /** Polls the call until it is answered, the wait is over or the client gave up; progress every few polls. */
  async function waitFor(view: ClientCallView, signal: AbortSignal, progress: (message: string) => Promise<void>): Promise<ClientCallView> {
    const deadline = Date.now() + options.waitMs;
    let current = view;
    for (let n = 0; current.status === 'parked' && Date.now() < deadline && !signal.aborted; n++) {
      if (n % 5 === 0) await progress(`waiting for approval: request ${current.requestId} (rule ${current.ruleId})`);
      await new Promise((r) => setTimeout(r, pollMs));
      current = (await client.workflow.getHandle(jobId).query(clientCallQuery, { callKey: current.callKey })) ?? current;
    }
    return current;
  }

  /** A call as a task: submitted as any call, and its task returned at once, working while it waits for a person. */
  async function startTask(name: string, args: Record<string, unknown>): Promise<CreateTaskResult> {
    if (name === WAIT_TOOL || name === STATUS_TOOL) throw new McpError(ErrorCode.MethodNotFound, `${name} does not run as a task: with tasks, tasks/get and tasks/result do its work`);
    try {
      const view = await submit(taskCallKey(), name, args);
      const task = await taskStore.taskOf(view);
      // What a host may hand its model at once while the task works (the 2025-11-25 spec's provisional key).
      return view.status === 'parked' ? { task, _meta: { [MODEL_IMMEDIATE_RESPONSE]: `${waitingText(view).split('\n')[0]} The result comes with this task.` } } : { task };
    } catch (err) {
      // Refused before the gate: a completed task whose result says why, as a call without a task would be answered.
      if (err instanceof WorkflowUpdateFailedError) return { task: taskStore.refuse(refused(name, err)) };
      // Nothing says whether the job took it: no task to give; the same call sent again attaches if it did.
      throw new McpError(ErrorCode.InternalError, `airlock could not take this call: ${describeError(err)}`);
    }
  }

  server.setRequestHandler(CallToolRequestSchema, async (request, extra) => {
    const { name } = request.params;
    const args = request.params.arguments ?? {};
    if (request.params.task !== undefined) return startTask(name, args);
    const token = extra._meta?.progressToken;
    let sent = 0;
    const progress = async (message: string) => {
      if (token === undefined) return;
      await extra.sendNotification({ method: 'notifications/progress', params: { progressToken: token, progress: ++sent, message } });
    };
    try {
      if (name === STATUS_TOOL) {
        const calls = await client.workflow.getHandle(jobId).query(clientCallsQuery).catch(() => []);
        if (calls.length === 0) return text('No calls yet.');
        return text(calls.map((c) => (c.status === 'parked' ? `${c.callKey}: ${c.toolName} waits for approval (request ${c.requestId}, rule ${c.ruleId})` : `${c.callKey}: ${c.toolName} ${c.isError ? 'did not run' : 'answered'}`)).join('\n'));
      }
      if (name === WAIT_TOOL) {
        const call = typeof args.call === 'string' ? args.call : '';
        const known = await client.workflow.getHandle(jobId).query(clientCallQuery, { callKey: call });
        if (known === null) return text(`No call ${JSON.stringify(call)} in this agent's job: pass the call id a "waiting for approval" answer gave.`, true);
        return resultOf(await waitFor(known, extra.signal, progress));
      }
      const first = await submit(randomUUID(), name, args);
      return resultOf(await waitFor(first, extra.signal, progress));
    } catch (err) {
      // Refused before the gate (unknown tool, invalid arguments): the tool's result says why.
      if (err instanceof WorkflowUpdateFailedError) return text(refused(name, err), true);
      return text(`airlock could not take this call: ${describeError(err)}`, true);
    }
  });
  return server;
}
