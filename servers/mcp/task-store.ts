import { randomUUID } from 'node:crypto';
import type { TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import { ErrorCode, McpError, type CallToolResult, type Result, type Task } from '@modelcontextprotocol/sdk/types.js';
import { WorkflowNotFoundError } from '@temporalio/common';
import type { Client } from '@temporalio/client';
import { clientCallKeySchema, type ClientCallView } from '../../core/job/client-calls';
import type { AgentJobStateView, DecidedRequestView, PendingRequestView } from '../../core/job/job-view';
import { clientCallQuery, clientCallsQuery, stateQuery } from '../../workflows/messages';
import { agentJobId } from './agent-job';

/**
 * MCP Tasks (protocol 2025-11-25) whose store is the agent's job, not this
 * process: a task is a call of the job, its id is `<jobId>:<callKey>`, and
 * its state is what `clientCall` answers. So a task id outlives any
 * `airlock mcp` process, and a reviewer's decision reaches it however long
 * it takes. Only the server's own agent's job is ever read: the agent is
 * fixed per gateway (per token, over HTTP), and a task id naming another
 * job is refused here, whatever transport serves the request. The SDK's
 * sessionId is not looked at: the agent, not a connection, owns its tasks,
 * which is what lets them outlive one.
 */

/** How often a client should ask again: a person decides, not a machine. */
export const TASK_POLL_MS = 2_000;

/** A call key the gateway makes for a task: its creation time rides in it, since the job's view of a call has none. */
export function taskCallKey(now = Date.now()): string {
  return `task-${now}-${randomUUID()}`;
}

const createdOfKey = (callKey: string): number | undefined => {
  const ms = /^task-(\d{13})-/.exec(callKey)?.[1];
  return ms === undefined ? undefined : Number(ms);
};

const iso = (ms: number) => new Date(ms).toISOString();
const text = (t: string, isError: boolean): CallToolResult => ({ content: [{ type: 'text', text: t }], ...(isError ? { isError: true } : {}) });

/** What a working task says: which rule asked whom, and until when. */
export function waitingMessage(view: Extract<ClientCallView, { status: 'parked' }>, pending: PendingRequestView | undefined): string {
  const who = pending === undefined ? [] : [pending.reviewers === null ? 'any reviewer may decide' : `reviewers: ${pending.reviewers.join(', ')}`, `expires ${pending.expiresAt}`];
  return [`waiting for approval: rule ${view.ruleId}, request ${view.requestId}`, ...who].join('; ');
}

function answeredMessage(view: Extract<ClientCallView, { status: 'answered' }>, decided: DecidedRequestView | undefined): string {
  if (decided?.status === 'denied') return `denied by ${decided.reviewer ?? 'a reviewer'}${decided.reason !== null ? `: ${decided.reason}` : ''}`;
  if (view.isError) return 'did not run (the result says why)';
  return decided?.status === 'approved' ? `approved by ${decided.reviewer ?? 'a reviewer'} and run` : 'answered';
}

/** No job yet (the agent made no call): nothing to find, which is not an error; anything else is. */
const noJob =
  <T>(nothing: T) =>
  (err: unknown): T => {
    if (err instanceof WorkflowNotFoundError) return nothing;
    throw err;
  };

/** A refusal before the gate (unknown tool, invalid arguments) never reached the job: kept here, a while. */
interface Refusal {
  readonly task: Task;
  readonly result: CallToolResult;
}
const KEPT_REFUSALS = 200;

export class AirlockTaskStore implements TaskStore {
  private readonly jobId: string;
  private readonly refusals = new Map<string, Refusal>();

  constructor(private readonly options: { readonly client: Client; readonly agent: string }) {
    this.jobId = agentJobId(options.agent);
  }

  /** The task of a call the job answered or parked (what `tools/call` with `task` returns at once). */
  async taskOf(view: ClientCallView): Promise<Task> {
    const state = view.requestId === undefined ? undefined : await this.state();
    return this.describe(view, state);
  }

  /** A call refused before the gate, as a completed task whose result says why. */
  refuse(message: string): Task {
    const now = iso(Date.now());
    const task: Task = { taskId: `${this.jobId}:refused-${randomUUID()}`, status: 'completed', ttl: null, createdAt: now, lastUpdatedAt: now, pollInterval: TASK_POLL_MS, statusMessage: 'did not run (the result says why)' };
    this.refusals.set(task.taskId, { task, result: text(message, true) });
    for (const key of this.refusals.keys()) {
      if (this.refusals.size <= KEPT_REFUSALS) break;
      this.refusals.delete(key);
    }
    return task;
  }

  /** Tasks start in the gateway's `tools/call` (the call's key is the job's), never through the SDK's createTask. */
  createTask(): Promise<Task> {
    return Promise.reject(new McpError(ErrorCode.InternalError, 'airlock creates tasks from tools/call only'));
  }

  async getTask(taskId: string): Promise<Task | null> {
    const refused = this.refusals.get(taskId);
    if (refused !== undefined) return refused.task;
    const view = await this.call(taskId);
    return view === null ? null : this.taskOf(view);
  }

  /** A task's result is the job's answer to the call: the SDK asks only once `getTask` says completed. */
  async getTaskResult(taskId: string): Promise<Result> {
    const refused = this.refusals.get(taskId);
    if (refused !== undefined) return refused.result;
    const view = await this.call(taskId);
    if (view === null) throw new McpError(ErrorCode.InvalidParams, `Task not found: ${taskId}`);
    if (view.status !== 'answered') throw new McpError(ErrorCode.InvalidRequest, `task ${taskId} still waits for approval (request ${view.requestId})`);
    return text(view.text, view.isError);
  }

  /** Results are the job's: nothing here stores one. */
  storeTaskResult(): Promise<void> {
    return Promise.reject(new McpError(ErrorCode.InternalError, "airlock's task results are the job's answers; nothing stores them here"));
  }

  /**
   * The SDK calls this for `tasks/cancel` only. airlock does not withdraw
   * an approval request from the agent's side: a reviewer may be reading
   * it or deciding it right now, and an approved call may already be
   * running under its grant; the request is the reviewers' to decide, so
   * it stays with them (or lapses at its expiry), and the task ends then.
   */
  async updateTaskStatus(taskId: string): Promise<void> {
    const view = await this.call(taskId);
    const request = view?.status === 'parked' ? `request ${view.requestId}` : 'its request';
    throw new McpError(
      ErrorCode.InvalidRequest,
      `airlock does not withdraw an approval request from the agent's side: ${request} stays with its reviewers until one decides it or it expires, and the task ends then (an operator may end the whole job with \`airlock cancel ${this.jobId}\`)`,
    );
  }

  /**
   * The job's waiting calls, then its latest answered ones (at most 50, all
   * `clientCalls` gives), and this process's refusals: an older answered
   * call's task still answers tasks/get without being listed.
   */
  async listTasks(cursor?: string): Promise<{ tasks: Task[] }> {
    // Everything comes in one page: a cursor can only be one this server never gave.
    if (cursor !== undefined) throw new McpError(ErrorCode.InvalidParams, `unknown cursor ${JSON.stringify(cursor)}`);
    const calls = await this.handle()
      .query(clientCallsQuery)
      .catch(noJob([]));
    const state = calls.some((c) => c.requestId !== undefined) ? await this.state() : undefined;
    return { tasks: [...calls.map((c) => this.describe(c, state)), ...[...this.refusals.values()].map((r) => r.task)] };
  }

  private handle() {
    return this.options.client.workflow.getHandle(this.jobId);
  }

  private async state(): Promise<AgentJobStateView | undefined> {
    return this.handle()
      .query(stateQuery)
      .catch(() => undefined);
  }

  /** The call a task id names, null when there is none; another agent's job is refused, not looked up. */
  private async call(taskId: string): Promise<ClientCallView | null> {
    const at = taskId.indexOf(':');
    const jobId = at < 0 ? '' : taskId.slice(0, at);
    const callKey = clientCallKeySchema.safeParse(taskId.slice(at + 1));
    if (at < 0 || !callKey.success) return null;
    if (jobId !== this.jobId) throw new McpError(ErrorCode.InvalidParams, `task ${taskId} is not a task of agent ${this.options.agent}: this server answers for that agent's calls only`);
    return this.handle()
      .query(clientCallQuery, { callKey: callKey.data })
      .catch(noJob(null));
  }

  private describe(view: ClientCallView, state: AgentJobStateView | undefined): Task {
    const now = Date.now();
    const base = { taskId: `${this.jobId}:${view.callKey}`, pollInterval: TASK_POLL_MS };
    if (view.status === 'parked') {
      const pending = state?.pending.find((p) => p.requestId === view.requestId);
      const created = createdOfKey(view.callKey) ?? (pending !== undefined ? Date.parse(pending.createdAt) : now);
      // Until the approval lapses: then the call is answered (expired) and the task completes.
      const ttl = pending === undefined ? null : Math.max(0, Date.parse(pending.expiresAt) - created);
      return { ...base, status: 'working', ttl, createdAt: iso(created), lastUpdatedAt: pending?.createdAt ?? iso(created), statusMessage: waitingMessage(view, pending) };
    }
    const decided = state?.decided.find((d) => d.requestId === view.requestId);
    const created = createdOfKey(view.callKey) ?? now;
    // An answer with `isError` (denied, expired, not run) is `completed` too, its result saying why: the spec says such a
    // task "should" be `failed`, but the SDK's client (1.32.2) turns a failed task into a bare "Task … failed" error
    // without asking tasks/result, and the agent would never read the reviewer's reason.
    // Answered calls are kept by count (the job's last 500), not by time.
    return { ...base, status: 'completed', ttl: null, createdAt: iso(created), lastUpdatedAt: decided?.decidedAt ?? iso(created), statusMessage: answeredMessage(view, decided) };
  }
}
