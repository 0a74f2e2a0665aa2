import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { WorkflowUpdateFailedError } from '@temporalio/client';
import { toolsConfigSchema } from '../../core/config/tools/tools-config';
import { defaultRules } from '../../core/policy/default-rules';
import { availableToolNames } from '../../core/tools/registry';
import { UNOBSERVABLE_UPSTREAM } from '../../core/tools/upstream/upstream-tool';
import { UpstreamServers } from '../../host/mcp-upstream/upstream-servers';
import { submitCallUpdate } from '../../workflows/messages';
import { JobHarness } from '../helpers/job-harness';
import { textOf } from '../helpers/mcp-client';
import { repoRoot, type Spawned } from '../helpers/processes';

/**
 * An upstream MCP server behind airlock: the reference filesystem server
 * (`@modelcontextprotocol/server-filesystem`), started by a real tools
 * worker process from the tools config, its allowlisted tools offered as
 * `mcp_files_*` through `airlock mcp` to the official SDK's client. A
 * write through it parks (its server declares it destructive), is
 * approved from the CLI and runs once; a tool outside the allowlist is
 * neither offered nor sent to the server, however it is asked for.
 */

const serverFs = join(repoRoot, 'node_modules', '@modelcontextprotocol', 'server-filesystem', 'dist', 'index.js');
const lent = ['mcp_files_read_text_file', 'mcp_files_write_file', 'mcp_files_create_directory', 'mcp_files_list_directory'];

let h: JobHarness;
let toolsFile: string;
let worker: Spawned;
let mcp: Client;


beforeAll(async () => {
  const top = mkdtempSync(join(tmpdir(), 'airlock-upstream-'));
  const root = join(top, 'share');
  mkdirSync(root);
  toolsFile = join(top, 'tools.yaml');
  // The reference server: its annotations trusted, so its read-only tools run as reads.
  const servers = { files: { command: [process.execPath, serverFs, root], trustAnnotations: true } };
  writeFileSync(toolsFile, JSON.stringify({ version: 1, roots: [root], mcp: { servers, tools: lent } }));
  // The agent lists the upstream as an agent worker does at start.
  const parsed = toolsConfigSchema.parse(JSON.parse(readFileSync(toolsFile, 'utf8')));
  if (parsed.mcp === undefined) throw new Error('the test config lost its mcp section');
  const upstream = await UpstreamServers.connect({ config: parsed.mcp, file: toolsFile, version: 'test' });
  await upstream.close();
  h = await JobHarness.create({
    // The built-in rules, decided without a reviewer's key here (signatures have their own tests).
    rules: { ...defaultRules, rules: defaultRules.rules?.map((r) => (r.approval === undefined ? r : { ...r, approval: { ...r.approval, signatureRequired: false } })) },
    toolsInProcess: false,
    detectorRoots: [root],
    availableTools: [...availableToolNames({ files: true, services: false, http: false, commands: false }), ...upstream.specs.map((s) => s.name)],
    upstreamTools: upstream.specs,
  });
  worker = h.spawnToolsWorker({ AIRLOCK_TOOLS_CONFIG: toolsFile });
  await worker.waitFor(/workers polling airlock-tools\b/, 60_000);
  mcp = await connect();
}, 120_000);

afterAll(async () => {
  await mcp?.close();
  await h?.close();
});

async function connect(): Promise<Client> {
  const env = Object.fromEntries(Object.entries(h.processEnv({ AIRLOCK_TOOLS_CONFIG: toolsFile })).filter((e): e is [string, string] => e[1] !== undefined));
  const client = new Client({ name: 'airlock-test-client', version: '1.0.0' });
  await client.connect(new StdioClientTransport({ command: process.execPath, args: [join(repoRoot, 'bin', 'airlock.js'), 'mcp', '--agent', 'desk', '--wait', '3s'], env, stderr: 'inherit' }));
  return client;
}

/** Where the upstream server's root is: the folder the tools config lends it. */
const inRoot = (name: string) => join(JSON.parse(readFileSync(toolsFile, 'utf8')).roots[0] as string, name);

describe('an upstream MCP server behind airlock', () => {
  test('offers the allowlisted tools under airlock names with the upstream schema and annotations, and nothing else of the server', async () => {
    const { tools } = await mcp.listTools();
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(lent));
    expect(names.filter((n) => n.startsWith('mcp_'))).toHaveLength(lent.length);
    const write = tools.find((t) => t.name === 'mcp_files_write_file');
    expect(write?.inputSchema).toMatchObject({ type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } }, required: ['path', 'content'] });
    expect(write?.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true, idempotentHint: true });
  });

  test('a read answers at once; a write parks, the card says airlock cannot check the target, and once approved it runs once', async () => {
    writeFileSync(inRoot('notes.txt'), 'first line\n');
    const read = await mcp.callTool({ name: 'mcp_files_read_text_file', arguments: { path: inRoot('notes.txt') } });
    expect(textOf(read)).toContain('first line');
    expect(read.isError).toBeFalsy();

    const waiting = textOf(await mcp.callTool({ name: 'mcp_files_write_file', arguments: { path: inRoot('notes.txt'), content: 'replaced\n' } }));
    expect(waiting).toMatch(/^Waiting for approval: request \S+ \(rule approve-deletes\)/);
    const requestId = /request (\S+) /.exec(waiting)?.[1] ?? '';
    const call = /"call": "([^"]+)"/.exec(waiting)?.[1] ?? '';
    expect(readFileSync(inRoot('notes.txt'), 'utf8')).toBe('first line\n');
    const card = await h.cli(['show', 'mcp-desk']);
    expect(card.stdout).toContain(UNOBSERVABLE_UPSTREAM);
    expect(card.stdout).toContain('mcp_files_write_file');

    expect(await h.cli(['approve', 'mcp-desk', '--request', requestId, '--reviewer', 'alice'])).toMatchObject({ code: 0 });
    let done = await mcp.callTool({ name: 'airlock_wait', arguments: { call } });
    for (let i = 0; i < 5 && textOf(done).startsWith('Waiting for approval'); i++) done = await mcp.callTool({ name: 'airlock_wait', arguments: { call } });
    expect(done.isError).toBeFalsy();
    expect(textOf(done)).toContain('Successfully wrote');
    expect(readFileSync(inRoot('notes.txt'), 'utf8')).toBe('replaced\n');
    // Once: a later change to the file stays; asking for the answer again runs nothing.
    writeFileSync(inRoot('notes.txt'), 'edited by hand\n');
    expect(textOf(await mcp.callTool({ name: 'airlock_wait', arguments: { call } }))).toContain('Successfully wrote');
    expect(readFileSync(inRoot('notes.txt'), 'utf8')).toBe('edited by hand\n');
    const writes = () => h.audit('mcp-desk', 'tool_executed').filter((e) => e.data.toolName === 'mcp_files_write_file');
    for (let i = 0; i < 100 && writes().length === 0; i++) await new Promise((r) => setTimeout(r, 100));
    expect(writes()).toHaveLength(1);
  });

  test('a tool its server does not declare read-only waits for a person under the built-in rule; a denial reaches the client with the reason', async () => {
    const waiting = textOf(await mcp.callTool({ name: 'mcp_files_create_directory', arguments: { path: inRoot('made-by-agent') } }));
    expect(waiting).toMatch(/^Waiting for approval: request \S+ \(rule approve-upstream-changes\)/);
    const requestId = /request (\S+) /.exec(waiting)?.[1] ?? '';
    const call = /"call": "([^"]+)"/.exec(waiting)?.[1] ?? '';
    expect(await h.cli(['deny', 'mcp-desk', '--request', requestId, '--reviewer', 'alice', '--reason', 'no new folders here'])).toMatchObject({ stderr: '', code: 0 });
    const denied = await mcp.callTool({ name: 'airlock_wait', arguments: { call } });
    expect(denied.isError).toBe(true);
    expect(textOf(denied)).toContain('no new folders here');
    expect(existsSync(inRoot('made-by-agent'))).toBe(false);
  });

  test('a tool outside the allowlist is refused before the server hears of it, through MCP and through a forged Temporal update', async () => {
    writeFileSync(inRoot('keep.txt'), 'stay');
    const moved = await mcp.callTool({ name: 'mcp_files_move_file', arguments: { source: inRoot('keep.txt'), destination: inRoot('gone.txt') } });
    expect(moved.isError).toBe(true);
    expect(textOf(moved)).toMatch(/unknown tool "mcp_files_move_file"/);
    const forged = h.env.client.workflow.getHandle('mcp-desk').executeUpdate(submitCallUpdate, {
      args: [{ callKey: 'forged-call-0001', toolName: 'mcp_files_move_file', args: { source: inRoot('keep.txt'), destination: inRoot('gone.txt') } }],
    });
    await expect(forged).rejects.toBeInstanceOf(WorkflowUpdateFailedError);
    expect(existsSync(inRoot('keep.txt')) && !existsSync(inRoot('gone.txt'))).toBe(true);
  });

  test("a model-driven job gets the upstream tools with their server's schema and calls them through the same gate", async () => {
    writeFileSync(inRoot('model.txt'), 'for the model');
    const { jobId } = await h.start({
      script: {
        turns: [
          { tool_calls: [{ name: 'mcp_files_read_text_file', arguments: { path: inRoot('model.txt') } }] },
          { tool_calls: [{ name: 'complete', arguments: { summary: 'read it upstream' } }] },
        ],
      },
    });
    expect(await h.result(jobId)).toMatchObject({ status: 'completed', summary: 'read it upstream' });
    const [first, second] = h.requestsOf(jobId);
    const offered = ((first?.tools ?? []) as Array<{ function?: { name?: string; parameters?: unknown } }>).map((t) => t.function);
    expect(offered.find((f) => f?.name === 'mcp_files_read_text_file')?.parameters).toMatchObject({ type: 'object', properties: { path: { type: 'string' } }, required: ['path'] });
    expect(offered.some((f) => f?.name === 'mcp_files_move_file')).toBe(false);
    expect(second?.messages[3]).toMatchObject({ role: 'tool', content: 'for the model' });
  });
});
