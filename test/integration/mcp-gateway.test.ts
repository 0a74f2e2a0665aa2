import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { JobHarness } from '../helpers/job-harness';
import { connectMcp, textOf } from '../helpers/mcp-client';

/**
 * `airlock mcp` as an MCP client sees it, over stdio with the official
 * SDK's client: airlock's tools with their schemas and annotations; an
 * allowed read answered at once; a delete held open with progress, then
 * answered "waiting" with a call id, decided from the CLI, and its result
 * fetched with airlock_wait; a denial as an error result with the
 * reviewer's reason; a resent call attached to the request that waits.
 */

let h: JobHarness;
let mcp: Client;

beforeAll(async () => {
  h = await JobHarness.create({
    rules: { version: 1, rules: [{ id: 'approve-deletes', version: 1, name: 'deletes need a person', scope: { categories: ['delete'] }, action: 'request_approval' }] },
  });
  mcp = await connect();
});

/** An MCP client of its own `airlock mcp` process, as a desktop assistant starts it. */
async function connect(): Promise<Client> {
  return (await connectMcp(h)).client;
}
afterAll(async () => {
  await mcp?.close();
  await h?.close();
});

describe('airlock mcp over stdio', () => {
  test("lists airlock's tools with their schemas and annotations, and its own wait and status tools", async () => {
    const { tools } = await mcp.listTools();
    const byName = new Map(tools.map((t) => [t.name, t]));
    expect(byName.get('fs_list')?.annotations).toEqual({ readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });
    expect(byName.get('fs_delete')?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(byName.get('fs_delete')?.inputSchema).toMatchObject({ type: 'object', properties: { path: expect.objectContaining({ type: 'string' }) } });
    expect(byName.has('airlock_wait') && byName.has('airlock_status')).toBe(true);
    expect(byName.has('complete')).toBe(false);
  });

  test('an allowed read answers at once; a delete waits with progress, is approved from the CLI, and airlock_wait brings its result', async () => {
    writeFileSync(join(h.root, 'old-build.tar'), 'x'.repeat(100));
    const listed = await mcp.callTool({ name: 'fs_list', arguments: { path: '.' } });
    expect(listed.isError).toBeFalsy();
    expect(textOf(listed)).toContain('old-build.tar');

    const progress: string[] = [];
    const waiting = await mcp.callTool({ name: 'fs_delete', arguments: { path: 'old-build.tar' } }, undefined, { onprogress: (p) => progress.push(p.message ?? '') });
    expect(waiting.isError).toBeFalsy();
    const said = textOf(waiting);
    expect(said).toMatch(/^Waiting for approval: request \S+ \(rule approve-deletes\)/);
    expect(progress[0]).toMatch(/^waiting for approval: request \S+ \(rule approve-deletes\)$/);
    const requestId = /request (\S+) /.exec(said)?.[1] ?? '';
    const call = /"call": "([^"]+)"/.exec(said)?.[1] ?? '';
    expect(existsSync(join(h.root, 'old-build.tar'))).toBe(true);
    // The agent is the job's requester: the card says who asked.
    const pending = await h.cli(['pending', '--json']);
    expect(pending.stdout).toMatch(/"requester": "claude"/);

    expect(await h.cli(['approve', 'mcp-claude', '--request', requestId, '--reviewer', 'alice'])).toMatchObject({ code: 0 });
    const done = await mcp.callTool({ name: 'airlock_wait', arguments: { call } });
    expect(done.isError).toBeFalsy();
    expect(existsSync(join(h.root, 'old-build.tar'))).toBe(false);
  });

  test('a denial is an error result with the reason; the same call sent again attaches to the request that waits', async () => {
    writeFileSync(join(h.root, 'live.db'), 'precious');
    const first = textOf(await mcp.callTool({ name: 'fs_delete', arguments: { path: 'live.db' } }));
    const again = textOf(await mcp.callTool({ name: 'fs_delete', arguments: { path: 'live.db' } }));
    const requestId = /request (\S+) /.exec(first)?.[1] ?? '';
    expect(/request (\S+) /.exec(again)?.[1]).toBe(requestId);
    expect((await h.state('mcp-claude')).pending).toHaveLength(1);
    const status = textOf(await mcp.callTool({ name: 'airlock_status', arguments: {} }));
    expect(status).toContain(`fs_delete waits for approval (request ${requestId}`);
    // While it waits, the agent's other calls are not held: a read runs, a second call that needs a person says why it did not run.
    const read = await mcp.callTool({ name: 'fs_list', arguments: { path: '.' } });
    expect(read.isError).toBeFalsy();
    expect(textOf(read)).toContain('live.db');
    writeFileSync(join(h.root, 'other.tmp'), 'x');
    const second = await mcp.callTool({ name: 'fs_delete', arguments: { path: 'other.tmp' } });
    expect(second.isError).toBe(true);
    expect(textOf(second)).toContain(`another request of this agent waits for a decision (${requestId})`);
    expect((await h.state('mcp-claude')).pending).toHaveLength(1);

    expect(await h.cli(['deny', 'mcp-claude', '--request', requestId, '--reviewer', 'alice', '--reason', 'that is the live database'])).toMatchObject({ code: 0 });
    const call = /"call": "([^"]+)"/.exec(first)?.[1] ?? '';
    // Another `airlock mcp` process (the client restarted) knows the call by its id: it lives in the job, not in the server.
    const later = await connect();
    const denied = await later.callTool({ name: 'airlock_wait', arguments: { call } });
    await later.close();
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).toContain('that is the live database');
    expect(existsSync(join(h.root, 'live.db'))).toBe(true);
  });

  test('kill -9 of airlock mcp and the agent worker while a call waits: after the restart the call id still brings the result, run once', async () => {
    writeFileSync(join(h.root, 'cache.tmp.old'), 'x'.repeat(10));
    const { client, transport } = await connectMcp(h);
    const waiting = textOf(await client.callTool({ name: 'fs_delete', arguments: { path: 'cache.tmp.old' } }));
    const requestId = /request (\S+) /.exec(waiting)?.[1] ?? '';
    const call = /"call": "([^"]+)"/.exec(waiting)?.[1] ?? '';
    process.kill(transport.pid ?? 0, 'SIGKILL');
    await h.stopWorkers();
    // Decided while nothing of airlock but Temporal runs: the decision waits for a worker.
    const sent = await h.cli(['approve', 'mcp-claude', '--request', requestId, '--reviewer', 'alice']);
    expect(sent.code).toBe(0);
    await h.resumeWorkers();
    const after = await connect();
    let done = await after.callTool({ name: 'airlock_wait', arguments: { call } });
    for (let i = 0; i < 5 && textOf(done).startsWith('Waiting for approval'); i++) done = await after.callTool({ name: 'airlock_wait', arguments: { call } });
    await after.close();
    expect(done.isError).toBeFalsy();
    expect(existsSync(join(h.root, 'cache.tmp.old'))).toBe(false);
    const deletes = () => h.audit('mcp-claude', 'tool_executed').filter((e) => e.data.toolName === 'fs_delete' && e.data.requestId === requestId);
    for (let i = 0; i < 100 && deletes().length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(deletes()).toHaveLength(1);
  });

  test('an unknown tool and invalid arguments are error results, not protocol errors, and the audit log has them', async () => {
    const unknown = await mcp.callTool({ name: 'rm_rf', arguments: { path: '/' } });
    expect(unknown.isError).toBe(true);
    expect(textOf(unknown)).toMatch(/unknown tool "rm_rf"/);
    const invalid = await mcp.callTool({ name: 'fs_delete', arguments: { path: 7 } });
    expect(invalid.isError).toBe(true);
    expect(textOf(invalid)).toMatch(/path/);
    // The job refused both before its gate, which leaves no history: airlock mcp wrote them down.
    const audited = async () => JSON.parse((await h.cli(['audit', '--type', 'mcp_call_refused', '--json'])).stdout) as Array<{ jobId: string; data: { agent: string; toolName: string; reason: string } }>;
    let events = await audited();
    for (let i = 0; i < 20 && events.length < 2; i++) {
      await new Promise((r) => setTimeout(r, 100));
      events = await audited();
    }
    expect(events.map((e) => [e.jobId, e.data.agent, e.data.toolName])).toEqual(expect.arrayContaining([['mcp-claude', 'claude', 'rm_rf'], ['mcp-claude', 'claude', 'fs_delete']]));
    expect(events.find((e) => e.data.toolName === 'rm_rf')?.data.reason).toMatch(/unknown tool "rm_rf"/);
  });
});
