import { execFile } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { JobHarness } from '../helpers/job-harness';
import { mcpEnv, textOf, waitingIds } from '../helpers/mcp-client';
import { freePort } from '../helpers/ports';
import { repoRoot, spawnNode, type Spawned } from '../helpers/processes';
import { call } from '../helpers/raw-http';
import { withdrawRequestsUpdate } from '../../workflows/messages';

/**
 * `airlock mcp --listen` as MCP clients and attackers see it: the built
 * CLI serving Streamable HTTP, the official SDK's client with an agent's
 * bearer token. The token names the agent (its job, its requester); a
 * call that needs a person parks, is approved from the CLI and fetched
 * with airlock_wait by the same client object across a kill -9 of the
 * server; every request without a good token, from a foreign page or to
 * a foreign Host is refused in one line and audited.
 */

const run = promisify(execFile);

let h: JobHarness;
let port: number;
let server: Spawned;
let alice: string;

async function cliJson<T>(args: string[]): Promise<T> {
  const out = await h.cli([...args, '--json']);
  if (out.code !== 0) throw new Error(`airlock ${args.join(' ')} failed: ${out.stderr}`);
  return JSON.parse(out.stdout) as T;
}

async function startServer(): Promise<Spawned> {
  const spawned = spawnNode('bin/airlock.js', ['mcp', '--listen', `127.0.0.1:${port}`, '--wait', '3s'], mcpEnv(h));
  await spawned.waitFor(/serving MCP over HTTP at http:\/\/127\.0\.0\.1:\d+\/mcp/);
  return spawned;
}

const url = () => new URL(`http://127.0.0.1:${port}/mcp`);

async function connect(token: string | undefined): Promise<Client> {
  const client = new Client({ name: 'airlock-http-test', version: '1.0.0' });
  const headers: Record<string, string> = token === undefined ? {} : { Authorization: `Bearer ${token}` };
  await client.connect(new StreamableHTTPClientTransport(url(), { requestInit: { headers } }));
  return client;
}

interface RefusedEvent {
  readonly jobId: string;
  readonly data: { reason: string; remoteAddress: string; agent?: string; host?: string; origin?: string };
}
const refusals = async () => cliJson<RefusedEvent[]>(['audit', '--type', 'mcp_refused']);

beforeAll(async () => {
  h = await JobHarness.create({
    rules: { version: 1, rules: [{ id: 'approve-deletes', version: 1, name: 'deletes need a person', scope: { categories: ['delete'] }, action: 'request_approval' }] },
  });
  port = await freePort();
  alice = (await cliJson<{ token: string; job: string }>(['agent', 'add', 'alice'])).token;
  server = await startServer();
});
afterAll(async () => {
  server?.child.kill('SIGKILL');
  await h?.close();
});

describe('airlock mcp --listen', () => {
  test("lists the tools and answers an allowed read for the token's agent; the token's use is recorded", async () => {
    writeFileSync(join(h.root, 'notes.txt'), 'hello over http');
    const mcp = await connect(alice);
    const { tools } = await mcp.listTools();
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['fs_read', 'fs_delete', 'airlock_wait', 'airlock_status']));
    const read = await mcp.callTool({ name: 'fs_read', arguments: { path: 'notes.txt' } });
    expect(read.isError).toBeFalsy();
    expect(textOf(read)).toContain('hello over http');
    // The call went to alice's job.
    expect((await h.state('mcp-alice')).status).toBeDefined();
    await mcp.close();
    const listed = await cliJson<Array<{ agent: string; lastUsedAt: string | null }>>(['agent', 'list']);
    expect(listed.find((t) => t.agent === 'alice')?.lastUsedAt).toEqual(expect.any(String));
  });

  test('a delete parks and answers "waiting"; after a kill -9 and restart of airlock mcp the same client fetches the approved result', async () => {
    writeFileSync(join(h.root, 'old-build.tar'), 'x'.repeat(100));
    const mcp = await connect(alice);
    const progress: string[] = [];
    const waiting = textOf(await mcp.callTool({ name: 'fs_delete', arguments: { path: 'old-build.tar' } }, undefined, { onprogress: (p) => progress.push(p.message ?? '') }));
    expect(waiting).toMatch(/^Waiting for approval: request \S+ \(rule approve-deletes\)/);
    // Progress reaches the client over the response's event stream.
    expect(progress[0]).toMatch(/^waiting for approval: request \S+ \(rule approve-deletes\)$/);
    const { requestId, call: callId } = waitingIds(waiting);
    // The token's agent is the job's requester.
    let pending = await h.cli(['pending', '--json']);
    // The listing comes from visibility, which is eventually consistent.
    for (let i = 0; i < 50 && !pending.stdout.includes(requestId); i++) {
      await new Promise((r) => setTimeout(r, 200));
      pending = await h.cli(['pending', '--json']);
    }
    expect(pending.stdout).toMatch(/"jobId": "mcp-alice"/);
    expect(pending.stdout).toMatch(/"requester": "alice"/);

    server.child.kill('SIGKILL');
    await server.exited();
    expect(await h.cli(['approve', 'mcp-alice', '--request', requestId, '--reviewer', 'carol'])).toMatchObject({ code: 0 });
    server = await startServer();

    let done = await mcp.callTool({ name: 'airlock_wait', arguments: { call: callId } });
    for (let i = 0; i < 5 && textOf(done).startsWith('Waiting for approval'); i++) done = await mcp.callTool({ name: 'airlock_wait', arguments: { call: callId } });
    expect(done.isError).toBeFalsy();
    expect(existsSync(join(h.root, 'old-build.tar'))).toBe(false);
    await mcp.close();
  });

  test("revoking an agent withdraws the requests it left waiting: not run, answered so, audited; no reviewer can approve them after; --keep-requests leaves them", async () => {
    writeFileSync(join(h.root, 'dave.tar'), 'keep');
    const dave = (await cliJson<{ token: string }>(['agent', 'add', 'dave'])).token;
    const mcp = await connect(dave);
    const waiting = textOf(await mcp.callTool({ name: 'fs_delete', arguments: { path: 'dave.tar' } }));
    const { requestId, call: callId } = waitingIds(waiting);
    await mcp.close();

    const revoked = await h.cli(['agent', 'revoke', 'dave', '--reviewer', 'carol']);
    expect(revoked).toMatchObject({ code: 0, stderr: '' });
    expect(revoked.stdout).toContain("revoked agent dave's token");
    expect(revoked.stdout).toContain(`withdrew 1 waiting request of job mcp-dave (${requestId}): not run, and answered so`);
    const approve = await h.cli(['approve', 'mcp-dave', '--request', requestId, '--reviewer', 'carol']);
    expect(approve.code).not.toBe(0);
    expect(existsSync(join(h.root, 'dave.tar'))).toBe(true);
    const withdrawn = () => h.audit('mcp-dave', 'approval_withdrawn');
    for (let i = 0; i < 100 && withdrawn().length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(withdrawn()).toEqual([expect.objectContaining({ data: expect.objectContaining({ requestId, toolName: 'fs_delete', by: 'carol', reason: "withdrawn: agent dave's token was revoked" }) })]);
    // The job answers the call so: a new token of the agent reads why it did not run.
    const again = (await cliJson<{ token: string }>(['agent', 'add', 'dave'])).token;
    const back = await connect(again);
    const answer = await back.callTool({ name: 'airlock_wait', arguments: { call: callId } });
    expect(answer.isError).toBe(true);
    expect(textOf(answer)).toContain("carol withdrew this request: withdrawn: agent dave's token was revoked.");
    await back.close();
    // A withdrawal of no one, sent by any Temporal client: rejected before history, changing nothing.
    await expect(h.env.client.workflow.getHandle('mcp-dave').executeUpdate(withdrawRequestsUpdate, { args: [{ by: ' ', reason: 'x' }] })).rejects.toThrow();
    // Revoked again with nothing waiting: said so.
    expect((await h.cli(['agent', 'revoke', 'dave'])).stdout).toContain('nothing of job mcp-dave waited for a decision');

    writeFileSync(join(h.root, 'erin.tar'), 'keep');
    const erin = await connect((await cliJson<{ token: string }>(['agent', 'add', 'erin'])).token);
    const kept = waitingIds(textOf(await erin.callTool({ name: 'fs_delete', arguments: { path: 'erin.tar' } })));
    await erin.close();
    expect((await h.cli(['agent', 'revoke', 'erin', '--keep-requests'])).stdout).toContain('its waiting requests in job mcp-erin stay with their reviewers');
    expect((await h.state('mcp-erin')).pending.map((r) => r.requestId)).toEqual([kept.requestId]);
  });

  test('no token, an unknown token and a revoked token are refused with what to do, and audited without the token', async () => {
    await expect(connect(undefined)).rejects.toThrow(/no bearer token: create one with `airlock agent add NAME` and send it as Authorization: Bearer/);
    const missing = await call(port, { method: 'POST', path: '/mcp', headers: { Host: `127.0.0.1:${port}`, 'Content-Type': 'application/json' }, body: '{}' });
    expect(missing.status).toBe(401);
    expect(missing.headers['www-authenticate']).toMatch(/^Bearer /);
    expect(JSON.parse(missing.body)).toMatchObject({ jsonrpc: '2.0', error: { message: expect.stringMatching(/^no bearer token/) }, id: null });

    const forged = `airlock_agent_${'A'.repeat(43)}`;
    await expect(connect(forged)).rejects.toThrow(/this bearer token is not known here: create one with `airlock agent add NAME`/);

    const bob = (await cliJson<{ token: string }>(['agent', 'add', 'bob'])).token;
    const asBob = await connect(bob);
    expect((await asBob.listTools()).tools.length).toBeGreaterThan(0);
    expect(await h.cli(['agent', 'revoke', 'bob'])).toMatchObject({ code: 0 });
    // The very next request of the connected client is refused.
    await expect(asBob.listTools()).rejects.toThrow(/this bearer token of agent bob was revoked at \S+: make a new one with `airlock agent add bob`/);
    await expect(connect(bob)).rejects.toThrow(/revoked/);

    const events = await refusals();
    const reasons = events.map((e) => e.data.reason);
    expect(reasons).toEqual(expect.arrayContaining(['no_token', 'unknown_token', 'revoked_token']));
    expect(events.find((e) => e.data.reason === 'revoked_token')).toMatchObject({ jobId: 'mcp-bob', data: { agent: 'bob', remoteAddress: expect.stringMatching(/127\.0\.0\.1$/) } });
    const logged = JSON.stringify(events);
    for (const secret of [forged, bob, alice]) expect(logged).not.toContain(secret.slice('airlock_agent_'.length));
  });

  test('a page of another origin and a foreign Host are refused even with a good token, and audited', async () => {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const headers = { Authorization: `Bearer ${alice}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream' };
    const fromPage = await call(port, { method: 'POST', path: '/mcp', headers: { ...headers, Host: `127.0.0.1:${port}`, Origin: 'https://evil.example' }, body });
    expect(fromPage.status).toBe(403);
    expect(JSON.parse(fromPage.body)).toMatchObject({ error: { message: expect.stringMatching(/^requests from web pages of "https:\/\/evil\.example" are refused .*--allow-origin ORIGIN$/) } });
    // A DNS name rebound to 127.0.0.1 reaches the port with its own Host.
    const rebound = await call(port, { method: 'POST', path: '/mcp', headers: { ...headers, Host: `attacker.example:${port}` }, body });
    expect(rebound.status).toBe(421);
    expect(JSON.parse(rebound.body)).toMatchObject({ error: { message: expect.stringMatching(/^this server answers only for 127\.0\.0\.1:\d+ or .*not for host "attacker\.example:\d+"; .*--allow-host NAME$/) } });
    // The same request with the listen address as Host and no Origin goes through.
    const fine = await call(port, { method: 'POST', path: '/mcp', headers: { ...headers, Host: `localhost:${port}` }, body });
    expect(fine.status).toBe(200);
    expect(fine.body).toContain('fs_read');
    // Stateless: no session stream to open or end.
    const get = await call(port, { method: 'GET', path: '/mcp', headers: { Authorization: `Bearer ${alice}`, Host: `127.0.0.1:${port}` } });
    expect(get.status).toBe(405);

    const events = await refusals();
    expect(events.find((e) => e.data.reason === 'foreign_origin')).toMatchObject({ jobId: 'mcp', data: { origin: 'https://evil.example' } });
    expect(events.find((e) => e.data.reason === 'wrong_host')).toMatchObject({ data: { host: `attacker.example:${port}` } });
    const table = await h.cli(['audit', '--type', 'mcp_refused']);
    expect(table.stdout).toMatch(/mcp_refused .*MCP request refused \(wrong_host\) from /);
  });

  test('one agent cannot hold the server: a batch of many calls is refused, and past 16 requests in progress the next gets 429', async () => {
    const headers = { Authorization: `Bearer ${alice}`, 'Content-Type': 'application/json', Accept: 'application/json, text/event-stream', Host: `127.0.0.1:${port}` };
    const batch = JSON.stringify(Array.from({ length: 9 }, (_, i) => ({ jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'fs_list', arguments: { path: '.' } } })));
    const refused = await call(port, { method: 'POST', path: '/mcp', headers, body: batch });
    expect(refused.status).toBe(400);
    expect(refused.body).toContain('a JSON-RPC batch of 9 messages; send at most 8 in one request');
    // A call that waits for a person, and sixteen clients waiting on it (each held up to --wait).
    writeFileSync(join(h.root, 'held.tmp'), 'x');
    const waiting = await connect(alice);
    const parked = textOf(await waiting.callTool({ name: 'fs_delete', arguments: { path: 'held.tmp' } }));
    await waiting.close();
    const { call: callId } = waitingIds(parked);
    const wait = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'airlock_wait', arguments: { call: callId } } });
    const held = Array.from({ length: 16 }, () => call(port, { method: 'POST', path: '/mcp', headers, body: wait }));
    await new Promise((r) => setTimeout(r, 500));
    const over = await call(port, { method: 'POST', path: '/mcp', headers, body: wait });
    expect(over.status).toBe(429);
    expect(over.body).toContain('agent alice already has 16 requests in progress');
    expect((await Promise.all(held)).map((a) => a.status)).toEqual(Array(16).fill(200));
    // Once they ended, the agent is served again.
    expect((await call(port, { method: 'POST', path: '/mcp', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }) })).status).toBe(200);
  });

  test("the official inspector's CLI lists the tools and reads a file over HTTP and over stdio", async () => {
    writeFileSync(join(h.root, 'inspect.txt'), 'seen by the inspector');
    const inspector = join(repoRoot, 'node_modules', '.bin', 'mcp-inspector-cli');
    const env = { ...mcpEnv(h), PATH: `${join(process.execPath, '..')}:${process.env.PATH ?? ''}` };
    // inspector-cli 1.0.3 looks for its package.json at ../package.json from the working directory but imports it
    // from its own folder: only a working directory whose parent holds a package.json makes it find its own.
    const cwd = join(repoRoot, 'bin');
    const overHttp = (method: string[]) =>
      run(inspector, ['--cli', url().href, '--transport', 'http', '--header', `Authorization: Bearer ${alice}`, '--method', ...method], { env, cwd, timeout: 60_000 });
    const listed = JSON.parse((await overHttp(['tools/list'])).stdout) as { tools: Array<{ name: string }> };
    expect(listed.tools.map((t) => t.name)).toContain('fs_read');
    const read = JSON.parse((await overHttp(['tools/call', '--tool-name', 'fs_read', '--tool-arg', 'path=inspect.txt'])).stdout) as unknown;
    expect(textOf(read)).toContain('seen by the inspector');

    const overStdio = (method: string[]) =>
      run(inspector, ['--cli', process.execPath, join(repoRoot, 'bin', 'airlock.js'), 'mcp', '--agent', 'inspector', '--method', ...method], { env, cwd, timeout: 60_000 });
    const stdioListed = JSON.parse((await overStdio(['tools/list'])).stdout) as { tools: Array<{ name: string }> };
    expect(stdioListed.tools.map((t) => t.name)).toContain('fs_read');
    const stdioRead = JSON.parse((await overStdio(['tools/call', '--tool-name', 'fs_read', '--tool-arg', 'path=inspect.txt'])).stdout) as unknown;
    expect(textOf(stdioRead)).toContain('seen by the inspector');
  });
});
