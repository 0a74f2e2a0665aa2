import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { toolsConfigSchema } from '../../core/config/tools/tools-config';
import { preflight } from '../../core/job/preflight';
import { detectAll } from '../../core/policy/detectors';
import type { Capability, HostFor } from '../../core/tools/tool-host';
import { getTool, useUpstreamTools } from '../../core/tools/registry';
import { definitionDigest, upstreamCategory, upstreamToolName, type UpstreamToolSpec } from '../../core/tools/upstream/upstream-spec';
import { mcpTools } from '../../servers/mcp/mcp-tools';
import { UNOBSERVABLE_UPSTREAM } from '../../core/tools/upstream/upstream-tool';
import { outcomeOf } from '../../host/mcp-upstream/upstream-servers';
import { repoRoot } from '../helpers/processes';

/**
 * An upstream MCP server's tool as airlock sees it: its name, its
 * category from what its server declares, its schema checked before
 * policy, a target airlock cannot observe, and after a crash mid-call
 * an outcome that is unknown unless the tool is idempotent.
 */

const spec = (tool: string, annotations: UpstreamToolSpec['annotations'] = {}): UpstreamToolSpec => ({
  schemaVersion: 1,
  name: upstreamToolName('files', tool) ?? '',
  server: 'files',
  tool,
  description: `${tool} of the test server`,
  inputSchema: { type: 'object', properties: { path: { type: 'string' }, content: { type: 'string' } }, required: ['path'], additionalProperties: false, $schema: 'http://json-schema.org/draft-07/schema#' },
  annotations,
});

afterEach(() => useUpstreamTools([]));

test('names: mcp_<server>_<tool>, letters, digits, _ and -, at most 64 characters', () => {
  expect(upstreamToolName('files', 'write_file')).toBe('mcp_files_write_file');
  expect(upstreamToolName('home-nas', 'fs.read/all')).toBe('mcp_home_nas_fs_read_all');
  expect(upstreamToolName('files', 'x'.repeat(60))).toBeUndefined();
});

test('categories: a read-only hint reads only from a trusted server; the more dangerous hint wins; no annotation changes things; destructive deletes', () => {
  const trusted = (annotations: UpstreamToolSpec['annotations']) => upstreamCategory({ annotations, trustAnnotations: true });
  const untrusted = (annotations: UpstreamToolSpec['annotations']) => upstreamCategory({ annotations, trustAnnotations: false });
  expect(trusted({ readOnlyHint: true })).toBe('read');
  // A server that is not trusted (or a spec that does not say) never makes a read: its tool is a change.
  expect(untrusted({ readOnlyHint: true })).toBe('file_change');
  expect(upstreamCategory({ annotations: { readOnlyHint: true } })).toBe('file_change');
  expect(untrusted({ readOnlyHint: true, openWorldHint: true })).toBe('external_send');
  // A read-only tool that reaches outside (a fetch) can still carry data out: a send, trusted or not.
  expect(trusted({ readOnlyHint: true, openWorldHint: true })).toBe('external_send');
  // Both declared: the more dangerous wins, trusted or not.
  expect(trusted({ readOnlyHint: true, destructiveHint: true })).toBe('delete');
  expect(untrusted({ readOnlyHint: true, destructiveHint: true })).toBe('delete');
  expect(trusted({})).toBe('file_change');
  expect(trusted({ destructiveHint: true })).toBe('delete');
  expect(trusted({ destructiveHint: false, openWorldHint: true })).toBe('external_send');
  // A tool that says nothing is an upstream change: the built-in rule asks a person.
  expect(detectAll({ toolName: 'mcp_files_touch', category: 'file_change', args: {}, targets: [], settings: { roots: [], allowedHosts: [], deniedCommands: [] } })).toContain('upstream_change');
  expect(detectAll({ toolName: 'mcp_files_read', category: 'read', args: {}, targets: [], settings: { roots: [], allowedHosts: [], deniedCommands: [] } })).not.toContain('upstream_change');
});

test("a call is checked against the upstream's schema before policy, and an unknown upstream tool is refused", () => {
  useUpstreamTools([spec('write_file', { destructiveHint: true })]);
  const allowed = ['mcp_files_write_file'];
  const ok = preflight({ id: 'c1', name: 'mcp_files_write_file', arguments: JSON.stringify({ path: '/srv/a', content: 'x' }) }, allowed);
  expect(ok).toMatchObject({ kind: 'tool', category: 'delete', args: { path: '/srv/a', content: 'x' } });
  const bad = preflight({ id: 'c2', name: 'mcp_files_write_file', arguments: JSON.stringify({ path: 7, extra: true }) }, allowed);
  expect(bad).toMatchObject({ kind: 'error' });
  expect(bad.kind === 'error' ? bad.message : '').toMatch(/invalid arguments for mcp_files_write_file/);
  const unknown = preflight({ id: 'c3', name: 'mcp_files_move_file', arguments: '{}' }, [...allowed, 'mcp_files_move_file']);
  expect(unknown).toMatchObject({ kind: 'error', message: 'Error: unknown tool "mcp_files_move_file".' });
});

test('the target cannot be observed, so the reviewer is told so; after a crash the outcome is unknown unless the tool is idempotent', async () => {
  useUpstreamTools([spec('write_file', { destructiveHint: true }), { ...spec('touch', { idempotentHint: true }), trustAnnotations: true }, spec('poke', { idempotentHint: true })]);
  const write = getTool('mcp_files_write_file');
  const touch = getTool('mcp_files_touch');
  const poke = getTool('mcp_files_poke');
  if (write === undefined || touch === undefined || poke === undefined) throw new Error('upstream tools not in use');
  // A host that lends nothing: an upstream tool needs no capability of airlock's own.
  const bare = {} as HostFor<Capability>;
  const prepared = await write.prepare(bare, { path: '/srv/a' });
  expect(prepared.observed).toEqual([expect.objectContaining({ kind: 'subject', summary: UNOBSERVABLE_UPSTREAM })]);
  expect(await write.postcondition?.(bare, { path: '/srv/a' }, undefined)).toMatchObject({ present: false, undetectable: true });
  expect(await touch.postcondition?.(bare, { path: '/srv/a' }, undefined)).not.toHaveProperty('undetectable');
  // Idempotent on the word of a server that is not trusted: never sent a second time after a crash.
  expect(await poke.postcondition?.(bare, { path: '/srv/a' }, undefined)).toMatchObject({ present: false, undetectable: true });
  // Nothing a reviewer may edit: the approval is for these exact arguments.
  expect(write.editable).toEqual([]);
  // Without an upstream capability (a worker that lists no MCP server) nothing is sent.
  await expect(write.execute(bare, { path: '/srv/a' }, undefined)).rejects.toThrow(/no MCP server files configured/);
});

test("airlock mcp passes on a trusted server's annotations; of any other, what airlock takes the tool for", () => {
  useUpstreamTools([{ ...spec('read_file', { readOnlyHint: true, idempotentHint: true }), trustAnnotations: true }, spec('peek', { readOnlyHint: true, idempotentHint: true })]);
  const listed = new Map(mcpTools(['mcp_files_read_file', 'mcp_files_peek']).map((t) => [t.name, t.annotations]));
  expect(listed.get('mcp_files_read_file')).toEqual({ readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false });
  expect(listed.get('mcp_files_peek')).toEqual({ readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: false });
});

test('a tool\'s definition digest: its name, description, input schema and annotations, in canonical JSON', () => {
  const tool = { name: 'note', description: 'Writes a note.', inputSchema: { type: 'object', properties: { a: { type: 'string' }, b: { type: 'number' } } }, annotations: { readOnlyHint: false } };
  const digest = definitionDigest(tool);
  expect(digest).toMatch(/^[0-9a-f]{64}$/);
  // The same definition in another key order is the same; any change of any part is another.
  expect(definitionDigest({ annotations: { readOnlyHint: false }, inputSchema: { properties: { b: { type: 'number' }, a: { type: 'string' } }, type: 'object' }, description: 'Writes a note.', name: 'note' })).toBe(digest);
  for (const changed of [{ ...tool, description: 'Deletes a file.' }, { ...tool, annotations: { destructiveHint: true } }, { ...tool, inputSchema: { type: 'object' } }, { ...tool, name: 'note2' }]) expect(definitionDigest(changed)).not.toBe(digest);
});

test('each job sees the upstream tools its own snapshot froze', () => {
  useUpstreamTools([spec('write_file')]);
  expect(getTool('mcp_files_write_file')?.category).toBe('file_change');
  useUpstreamTools([]);
  expect(getTool('mcp_files_write_file')).toBeUndefined();
});

test('the tools config: servers by command or url, an allowlist naming listed servers, one machine only', () => {
  const ok = toolsConfigSchema.safeParse({ version: 1, mcp: { servers: { files: { command: ['node', 'server.js', '/srv'] }, web: { url: 'http://127.0.0.1:9000/mcp', headers: { Authorization: 'Bearer x' } } }, tools: ['mcp_files_read_text_file', 'mcp_web_fetch'] } });
  expect(ok.success).toBe(true);
  const stray = toolsConfigSchema.safeParse({ version: 1, mcp: { servers: { files: { command: ['node'] } }, tools: ['mcp_other_tool'] } });
  expect(stray.success ? '' : stray.error.issues[0]?.message).toMatch(/names none of the servers listed \(files\)/);
  const machines = toolsConfigSchema.safeParse({ version: 1, machines: { nas: { roots: ['/srv'] } }, mcp: { servers: { files: { command: ['node'] } }, tools: ['mcp_files_x'] } });
  expect(machines.success ? '' : machines.error.issues.map((i) => i.message).join()).toMatch(/one machine only/);
  const badName = toolsConfigSchema.safeParse({ version: 1, mcp: { servers: { Files: { command: ['node'] } }, tools: ['mcp_Files_x'] } });
  expect(badName.success).toBe(false);
});

test("an upstream's answer as the model reads it: text, other content named, isError a failed outcome", () => {
  expect(outcomeOf({ content: [{ type: 'text', text: 'done' }] })).toEqual({ ok: true, output: 'done' });
  expect(outcomeOf({ content: [{ type: 'text', text: 'no such file' }], isError: true })).toEqual({ ok: false, output: 'no such file' });
  expect(outcomeOf({ content: [{ type: 'image', data: 'AAAA', mimeType: 'image/png' }] }).output).toBe('[image image/png, 3 bytes]');
  expect(outcomeOf({ content: [], structuredContent: { n: 1 } }).output).toBe('{"n":1}');
});

test("the MCP guide's upstream example is a valid tools config", () => {
  const readme = readFileSync(join(repoRoot, 'docs', 'mcp.md'), 'utf8');
  const block = /# the tools config \(AIRLOCK_TOOLS_CONFIG\), one machine\n([\s\S]*?)```/.exec(readme)?.[1];
  const parsed = toolsConfigSchema.safeParse(parseYaml(block ?? ''));
  expect(parsed.success ? Object.keys(parsed.data.mcp?.servers ?? {}) : parsed.error.message).toEqual(['files', 'calendar']);
});

describe("what airlock checks of an upstream's schema stays cheap whatever the upstream lists", () => {
  const toolWith = (inputSchema: Record<string, unknown>) => {
    useUpstreamTools([{ ...spec('odd'), inputSchema }]);
    const tool = getTool('mcp_files_odd');
    if (tool === undefined) throw new Error('not in use');
    return tool;
  };

  test('a backtracking pattern is left to the upstream: no regular expression of an upstream runs here', () => {
    const tool = toolWith({ type: 'object', properties: { name: { type: 'string', pattern: '^(a+)+$' } }, required: ['name'] });
    // With the pattern compiled, this input takes many seconds; without it, nothing.
    expect(tool.parameters.safeParse({ name: `${'a'.repeat(40)}!` }).success).toBe(true);
    expect(tool.parameters.safeParse({ name: 7 }).success).toBe(false);
  });

  test('references (exponential fan-out), deep nesting and wide alternatives fall back to "a JSON object"', () => {
    const defs: Record<string, unknown> = {};
    for (let i = 0; i < 20; i++) defs[`d${i}`] = { anyOf: [{ $ref: `#/$defs/d${i + 1}` }, { $ref: `#/$defs/d${i + 1}` }] };
    defs.d20 = { type: 'string' };
    const fanOut = toolWith({ type: 'object', properties: { x: { $ref: '#/$defs/d0' } }, $defs: defs });
    expect(fanOut.parameters.safeParse({ x: 1 }).success).toBe(true);
    expect(fanOut.parameters.safeParse('not an object').success).toBe(false);
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 40; i++) deep = { type: 'array', items: deep };
    expect(toolWith({ type: 'object', properties: { x: deep } }).parameters.safeParse({ x: 'anything' }).success).toBe(true);
    const wide = toolWith({ type: 'object', properties: { x: { anyOf: Array.from({ length: 20 }, (_, i) => ({ const: i })) } } });
    expect(wide.parameters.safeParse({ x: 99 }).success).toBe(true);
  });

  test('extra properties a pattern would have matched stay allowed; the rest of the schema is still checked', () => {
    const tool = toolWith({ type: 'object', properties: { a: { type: 'integer' } }, patternProperties: { '^x-': { type: 'string' } }, additionalProperties: false, required: ['a'] });
    expect(tool.parameters.safeParse({ a: 1, 'x-note': 'ok' }).success).toBe(true);
    expect(tool.parameters.safeParse({ a: 'one' }).success).toBe(false);
  });
});
