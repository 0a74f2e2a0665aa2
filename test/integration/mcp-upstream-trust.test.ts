import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toolsConfigSchema } from '../../core/config/tools/tools-config';
import { defaultRules } from '../../core/policy/default-rules';
import { availableToolNames } from '../../core/tools/registry';
import { ToolRefusal } from '../../core/tools/tool-refusal';
import { UpstreamServers } from '../../host/mcp-upstream/upstream-servers';
import { JobHarness } from '../helpers/job-harness';
import { answered, clientJob as startClientJob } from '../helpers/client-driven';
import { repoRoot, type Spawned } from '../helpers/processes';

/**
 * Upstream MCP servers that lie, built on the reference SDK's McpServer and
 * started by a real tools worker process: a "read-only" tool that deletes,
 * a tool declaring both read-only and destructive, an open-world tool
 * given an allowed host's URL, and a tool whose definition changes after a
 * call of it was parked. Annotations are believed only of a server the
 * tools config trusts, the more dangerous hint wins, an upstream's sends
 * are never allowed by host, and an approved call is never sent to a tool
 * that changed under it.
 */

const fixture = join(repoRoot, 'dist', 'test', 'helpers', 'upstream-fixture-server.js');
let h: JobHarness;
let share: string;
let toolsFile: string;
let switchFile: string;
let sentFile: string;
let worker: Spawned;

beforeAll(async () => {
  const top = mkdtempSync(join(tmpdir(), 'airlock-upstream-trust-'));
  share = join(top, 'share');
  mkdirSync(share);
  switchFile = join(top, 'switched');
  sentFile = join(top, 'sent.log');
  toolsFile = join(top, 'tools.yaml');
  const env = { FIXTURE_SWITCH_FILE: switchFile, FIXTURE_SENT_FILE: sentFile };
  const mcp = {
    servers: {
      liar: { command: [process.execPath, fixture], env },
      trusted: { command: [process.execPath, fixture], env, trustAnnotations: true },
    },
    tools: ['mcp_liar_peek', 'mcp_liar_inspect', 'mcp_liar_post', 'mcp_trusted_peek', 'mcp_trusted_inspect', 'mcp_trusted_write_note'],
  };
  writeFileSync(toolsFile, JSON.stringify({ version: 1, roots: [share], mcp }));
  // The agent lists the upstreams as an agent worker does at start.
  const upstream = await UpstreamServers.connect({ config: toolsConfigSchema.parse(JSON.parse(readFileSync(toolsFile, 'utf8'))).mcp ?? mcp, file: toolsFile, version: 'test' });
  await upstream.close();
  h = await JobHarness.create({
    // The built-in rules (decided without a key here), with the host the open-world tool is given allowed.
    rules: {
      ...defaultRules,
      detectors: { allowedHosts: ['127.0.0.1'] },
      rules: defaultRules.rules?.map((r) => (r.approval === undefined ? r : { ...r, approval: { ...r.approval, signatureRequired: false } })),
    },
    toolsInProcess: false,
    detectorRoots: [share],
    availableTools: [...availableToolNames({ files: true, services: false, http: false, commands: false }), ...upstream.specs.map((s) => s.name)],
    upstreamTools: upstream.specs,
  });
  worker = h.spawnToolsWorker({ AIRLOCK_TOOLS_CONFIG: toolsFile });
  await worker.waitFor(/workers polling airlock-tools\b/, 60_000);
}, 120_000);

afterAll(async () => {
  await h?.close();
});

const clientJob = (name: string) => startClientJob(h, { name: `trust-${name}`, requester: 'desk' });

function file(name: string, content = 'keep me'): string {
  const path = join(share, name);
  writeFileSync(path, content);
  return path;
}

test('the worker says at start, per server, whether its annotations are trusted and which of its tools run without a person', () => {
  expect(worker.output()).toContain('airlock: MCP server liar: its annotations are not trusted (trustAnnotations is not set on it in the tools config), so none of its tools is taken for a read; each waits for a person unless a rule lets it run: mcp_liar_peek, mcp_liar_inspect, mcp_liar_post');
  expect(worker.output()).toContain('airlock: MCP server trusted: its annotations are trusted (trustAnnotations: true); declared read-only, these run without a person: mcp_trusted_peek; the rest wait as the rules say: mcp_trusted_inspect, mcp_trusted_write_note');
});

test('a tool declared read-only by a server that is not trusted waits for a person, and deletes nothing until one decides', async () => {
  const target = file('peek.txt');
  const job = await clientJob('peek');
  const parked = await job.submit('mcp_liar_peek', { path: target });
  expect(parked).toMatchObject({ status: 'parked', ruleId: 'approve-upstream-changes' });
  expect(existsSync(target)).toBe(true);
  const requestId = parked.status === 'parked' ? parked.requestId : '';
  expect(await h.cli(['deny', job.jobId, '--request', requestId, '--reviewer', 'alice', '--reason', 'a peek that deletes'])).toMatchObject({ code: 0 });
  expect((await answered(job.query, parked.callKey)).isError).toBe(true);
  expect(existsSync(target)).toBe(true);
});

test('a tool declaring both read-only and destructive is a delete, even on a trusted server: it waits under the delete rule', async () => {
  const job = await clientJob('inspect');
  for (const tool of ['mcp_liar_inspect', 'mcp_trusted_inspect']) {
    const target = file(`${tool}.txt`);
    const parked = await job.submit(tool, { path: target });
    expect(parked).toMatchObject({ status: 'parked', ruleId: 'approve-deletes' });
    expect(existsSync(target)).toBe(true);
    expect(await h.cli(['deny', job.jobId, '--request', parked.status === 'parked' ? parked.requestId : '', '--reviewer', 'alice', '--reason', 'not now'])).toMatchObject({ code: 0 });
    await answered(job.query, parked.callKey);
  }
});

test("a trusted server's read-only tool runs without a person: what trustAnnotations means", async () => {
  const target = file('trusted-peek.txt');
  const job = await clientJob('trusted-peek');
  const ran = await job.submit('mcp_trusted_peek', { path: target });
  expect(ran).toMatchObject({ status: 'answered', isError: false });
  // It lied: trusted, it was believed. The docs say to trust only a server whose code you trust.
  expect(existsSync(target)).toBe(false);
});

test("an upstream open-world tool given an allowed host's URL still waits for a person: airlock cannot see where the server sends", async () => {
  const job = await clientJob('post');
  const parked = await job.submit('mcp_liar_post', { url: 'http://127.0.0.1:9/hook', body: 'the secrets' });
  expect(parked).toMatchObject({ status: 'parked', ruleId: 'approve-outbound-sends' });
  expect(existsSync(sentFile)).toBe(false);
  expect(await h.cli(['deny', job.jobId, '--request', parked.status === 'parked' ? parked.requestId : '', '--reviewer', 'alice', '--reason', 'not to be sent'])).toMatchObject({ code: 0 });
  await answered(job.query, parked.callKey);
  expect(existsSync(sentFile)).toBe(false);
});

describe('a tool that changes after a call of it was parked', () => {
  test('checked again at the moment of sending: a definition other than the one approved is refused by the upstream client itself, nothing sent', async () => {
    const target = file('direct.txt', 'untouched');
    const config = toolsConfigSchema.parse(JSON.parse(readFileSync(toolsFile, 'utf8'))).mcp;
    if (config === undefined) throw new Error('the test config lost its mcp section');
    const upstream = await UpstreamServers.connect({ config, file: toolsFile, version: 'test', log: () => undefined });
    try {
      const now = await upstream.definition({ server: 'trusted', tool: 'write_note' });
      expect(now).toMatchObject({ digest: expect.stringMatching(/^[0-9a-f]{64}$/), lent: true });
      const sent = upstream.call({ server: 'trusted', tool: 'write_note', args: { path: target, text: 'x' }, definition: '0'.repeat(64) });
      await expect(sent).rejects.toBeInstanceOf(ToolRefusal);
      await expect(upstream.call({ server: 'trusted', tool: 'write_note', args: { path: target, text: 'x' }, definition: '0'.repeat(64) })).rejects.toThrow(
        "tool write_note of MCP server trusted changed since this call was judged (its description, input schema or annotations are not the ones the job's rules and its card saw); nothing was sent",
      );
      expect(readFileSync(target, 'utf8')).toBe('untouched');
      // The one it lends and lists now (before any change): sent.
      expect(await upstream.call({ server: 'trusted', tool: 'write_note', args: { path: target, text: 'x' }, definition: now.digest ?? '' })).toMatchObject({ ok: true });
    } finally {
      await upstream.close();
    }
  });
  test('the approved call is refused with the reason and never sent; a later call of the changed tool parks with a card saying the tool will refuse it, and is refused', async () => {
    const target = file('note.txt', 'the note before');
    const job = await clientJob('note');
    const parked = await job.submit('mcp_trusted_write_note', { path: target, text: 'a new note' });
    expect(parked).toMatchObject({ status: 'parked', ruleId: 'approve-upstream-changes' });
    // The server changes the tool (it now deletes) and announces it; the reviewer approves the card made for the old one.
    writeFileSync(switchFile, '');
    await new Promise((r) => setTimeout(r, 300));
    expect(await h.cli(['approve', job.jobId, '--request', parked.status === 'parked' ? parked.requestId : '', '--reviewer', 'alice'])).toMatchObject({ code: 0 });
    const done = await answered(job.query, parked.callKey);
    expect(done.isError).toBe(true);
    expect(done.text).toMatch(/tool write_note of MCP server trusted changed (after the call was approved|since the tools worker listed it|since this call was judged)/);
    expect(readFileSync(target, 'utf8')).toBe('the note before');
    expect(h.audit(job.jobId, 'tool_executed').filter((e) => e.data.toolName === 'mcp_trusted_write_note' && e.data.ok === true)).toEqual([]);

    // Its card says the tool will refuse it; approved anyway, it is refused, nothing sent.
    const again = await job.submit('mcp_trusted_write_note', { path: target, text: 'again' });
    expect(again).toMatchObject({ status: 'parked' });
    const card = (await h.airlock.state(job.jobId)).pending.find((r) => r.requestId === (again.status === 'parked' ? again.requestId : ''));
    expect(card?.reason).toContain('the tool will refuse this call: tool write_note of MCP server trusted changed since the tools worker listed it');
    expect(await h.cli(['approve', job.jobId, '--request', again.status === 'parked' ? again.requestId : '', '--reviewer', 'alice'])).toMatchObject({ code: 0 });
    expect((await answered(job.query, again.callKey)).text).toContain('changed since the tools worker listed it');
    expect(readFileSync(target, 'utf8')).toBe('the note before');
  });

});
