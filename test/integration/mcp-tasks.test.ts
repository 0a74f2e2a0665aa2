import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { CallToolResultSchema, CreateTaskResultSchema, type CreateTaskResult, type Task } from '@modelcontextprotocol/sdk/types.js';
import { JobHarness } from '../helpers/job-harness';
import { connectMcp, textOf } from '../helpers/mcp-client';

/**
 * `airlock mcp` to a client that speaks MCP Tasks (protocol 2025-11-25),
 * over stdio with the official SDK's client: a call sent with `task` gets a
 * task at once, working while a person decides, completed once decided
 * (a denial too, with the reason in an error result); the task lives in
 * the agent's job, so its id answers from a new `airlock mcp` process after
 * a kill -9 of the old one and of the agent worker.
 */

let h: JobHarness;
let mcp: Client;

beforeAll(async () => {
  h = await JobHarness.create({
    rules: { version: 1, rules: [{ id: 'approve-deletes', version: 1, name: 'deletes need a person', scope: { categories: ['delete'] }, action: 'request_approval' }] },
  });
  mcp = (await connectMcp(h)).client;
});
afterAll(async () => {
  await mcp?.close();
  await h?.close();
});

/** A `tools/call` with `task`: what a Tasks client sends. */
async function createTask(client: Client, name: string, args: Record<string, unknown>): Promise<CreateTaskResult> {
  return client.request({ method: 'tools/call', params: { name, arguments: args } }, CreateTaskResultSchema, { task: { ttl: 3_600_000 } });
}
const callAsTask = async (client: Client, name: string, args: Record<string, unknown>): Promise<Task> => (await createTask(client, name, args)).task;

/** Asks `tasks/get` until the task leaves `working`. */
async function settled(client: Client, taskId: string): Promise<Task> {
  let task = await client.experimental.tasks.getTask(taskId);
  for (let i = 0; i < 100 && task.status === 'working'; i++) {
    await new Promise((r) => setTimeout(r, 200));
    task = await client.experimental.tasks.getTask(taskId);
  }
  return task;
}

const requestOf = (task: Task) => /request (\S+?);/.exec(task.statusMessage ?? '')?.[1] ?? '';

/** The job's pending requests as `airlock pending --json` lists them, once the listing shows the job. */
async function pendingRequests(): Promise<Array<{ requestId: string; toolName: string }>> {
  for (let i = 0; ; i++) {
    const listed = JSON.parse((await h.cli(['pending', '--json'])).stdout) as Array<{ jobId: string; pending: Array<{ requestId: string; toolName: string }> }>;
    const job = listed.find((j) => j.jobId === 'mcp-claude');
    if ((job !== undefined && job.pending.length > 0) || i >= 50) return job?.pending ?? [];
    await new Promise((r) => setTimeout(r, 200));
  }
}

const executions = (requestId: string) => h.audit('mcp-claude', 'tool_executed').filter((e) => e.data.toolName === 'fs_delete' && e.data.requestId === requestId);
async function executedOnce(requestId: string): Promise<void> {
  for (let i = 0; i < 100 && executions(requestId).length === 0; i++) await new Promise((r) => setTimeout(r, 100));
  expect(executions(requestId)).toHaveLength(1);
}

describe('airlock mcp with MCP Tasks', () => {
  test('the server declares tasks for tools/call; gated tools may run as tasks, its own wait and status tools not', async () => {
    expect(mcp.getServerCapabilities()?.tasks).toMatchObject({ list: {}, cancel: {}, requests: { tools: { call: {} } } });
    const { tools } = await mcp.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(byName.get('fs_delete')?.execution).toEqual({ taskSupport: 'optional' });
    expect(byName.get('airlock_wait')?.execution).toEqual({ taskSupport: 'forbidden' });
    await expect(callAsTask(mcp, 'airlock_wait', { call: 'whatever-call' })).rejects.toThrow(/does not run as a task/);
  });

  test("an allowed read as a task completes at once, and the SDK's own task stream brings its result", async () => {
    writeFileSync(join(h.root, 'notes.txt'), 'hello');
    const task = await callAsTask(mcp, 'fs_list', { path: '.' });
    expect(task).toMatchObject({ status: 'completed', pollInterval: 2000 });
    expect(task.taskId).toMatch(/^mcp-claude:task-\d{13}-/);
    const result = await mcp.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError).toBeFalsy();
    expect(textOf(result)).toContain('notes.txt');

    const seen: string[] = [];
    let streamed: unknown;
    for await (const message of mcp.experimental.tasks.callToolStream({ name: 'fs_read', arguments: { path: 'notes.txt' } }, CallToolResultSchema, { task: {} })) {
      seen.push(message.type);
      if (message.type === 'result') streamed = message.result;
    }
    expect(seen[0]).toBe('taskCreated');
    expect(seen.at(-1)).toBe('result');
    expect(textOf(streamed)).toContain('hello');
  });

  test('a delete as a task works while it waits, the same call again is the same task and request, and the approval from the CLI completes it', async () => {
    writeFileSync(join(h.root, 'old-build.tar'), 'x'.repeat(100));
    const created = await createTask(mcp, 'fs_delete', { path: 'old-build.tar' });
    const { task } = created;
    expect(task.status).toBe('working');
    expect(created._meta?.['io.modelcontextprotocol/model-immediate-response']).toMatch(/^Waiting for approval: request \S+ \(rule approve-deletes\)/);
    expect(task.statusMessage).toMatch(/^waiting for approval: rule approve-deletes, request \S+; any reviewer may decide; expires \d{4}-/);
    expect(task.ttl).toBeGreaterThan(0);
    const requestId = requestOf(task);
    expect((await mcp.experimental.tasks.getTask(task.taskId)).statusMessage).toBe(task.statusMessage);
    expect((await mcp.experimental.tasks.listTasks()).tasks.map((t) => t.taskId)).toContain(task.taskId);

    // A client that lost the answer sends the call again: the same task, the same single request.
    const again = await callAsTask(mcp, 'fs_delete', { path: 'old-build.tar' });
    expect(again.taskId).toBe(task.taskId);
    expect(await pendingRequests()).toEqual([expect.objectContaining({ requestId, toolName: 'fs_delete' })]);

    // Cancel cannot take the request back from its reviewers: refused, and the task still works.
    await expect(mcp.experimental.tasks.cancelTask(task.taskId)).rejects.toThrow(/stays with its reviewers/);
    expect((await mcp.experimental.tasks.getTask(task.taskId)).status).toBe('working');
    expect(existsSync(join(h.root, 'old-build.tar'))).toBe(true);

    expect(await h.cli(['approve', 'mcp-claude', '--request', requestId, '--reviewer', 'alice'])).toMatchObject({ code: 0 });
    // tasks/result waits for the task to end, then gives the tool's result.
    const result = await mcp.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError).toBeFalsy();
    const done = await mcp.experimental.tasks.getTask(task.taskId);
    expect(done).toMatchObject({ status: 'completed', statusMessage: 'approved by alice and run' });
    expect(existsSync(join(h.root, 'old-build.tar'))).toBe(false);
    await executedOnce(requestId);
  });

  test("a denial is a completed task whose result is an error with the reason, through the SDK's own task stream; a refused call and another agent too", async () => {
    writeFileSync(join(h.root, 'live.db'), 'precious');
    const seen: Task[] = [];
    let streamed: unknown;
    // The reviewer denies while the SDK's stream polls the task.
    for await (const message of mcp.experimental.tasks.callToolStream({ name: 'fs_delete', arguments: { path: 'live.db' } }, CallToolResultSchema, { task: {} })) {
      if (message.type === 'taskCreated') {
        seen.push(message.task);
        expect(await h.cli(['deny', 'mcp-claude', '--request', requestOf(message.task), '--reviewer', 'alice', '--reason', 'that is the live database'])).toMatchObject({ code: 0 });
      }
      if (message.type === 'taskStatus') seen.push(message.task);
      if (message.type === 'result') streamed = message.result;
      if (message.type === 'error') throw message.error;
    }
    const task = seen[0];
    expect(task?.status).toBe('working');
    expect(seen.at(-1)).toMatchObject({ taskId: task?.taskId, status: 'completed', statusMessage: 'denied by alice: that is the live database' });
    expect((streamed as { isError?: boolean }).isError).toBe(true);
    expect(textOf(streamed)).toContain('that is the live database');
    const result = await mcp.experimental.tasks.getTaskResult(task?.taskId ?? '', CallToolResultSchema);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toContain('that is the live database');
    expect(existsSync(join(h.root, 'live.db'))).toBe(true);

    // Refused before the gate: a completed task too, not a protocol error.
    const unknown = await callAsTask(mcp, 'rm_rf', { path: '/' });
    expect(unknown.status).toBe('completed');
    const refused = await mcp.experimental.tasks.getTaskResult(unknown.taskId, CallToolResultSchema);
    expect(refused.isError).toBe(true);
    expect(textOf(refused)).toMatch(/unknown tool "rm_rf"/);

    // A task id naming another agent's job is not this server's to answer.
    await expect(mcp.experimental.tasks.getTask((task?.taskId ?? '').replace(/^mcp-claude:/, 'mcp-mallory:'))).rejects.toThrow(/not a task of agent claude/);
  });

  test('kill -9 of airlock mcp and the agent worker while a task waits: a new process and client get the same task id to completed, run once', async () => {
    writeFileSync(join(h.root, 'cache.tmp.old'), 'x'.repeat(10));
    const { client, transport } = await connectMcp(h);
    const task = await callAsTask(client, 'fs_delete', { path: 'cache.tmp.old' });
    expect(task.status).toBe('working');
    const requestId = requestOf(task);
    process.kill(transport.pid ?? 0, 'SIGKILL');
    await h.stopWorkers();
    // Decided while nothing of airlock but Temporal runs: the decision waits for a worker.
    expect(await h.cli(['approve', 'mcp-claude', '--request', requestId, '--reviewer', 'alice'])).toMatchObject({ code: 0 });
    await h.resumeWorkers();

    const after = await connectMcp(h);
    const done = await settled(after.client, task.taskId);
    expect(done.status).toBe('completed');
    const result = await after.client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    await after.client.close();
    expect(result.isError).toBeFalsy();
    expect(existsSync(join(h.root, 'cache.tmp.old'))).toBe(false);
    await executedOnce(requestId);
  });
});
