import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toolsConfigSchema } from '../../core/config/tools/tools-config';
import { defaultRules } from '../../core/policy/default-rules';
import { availableToolNames } from '../../core/tools/registry';
import { UpstreamServers } from '../../host/mcp-upstream/upstream-servers';
import { answered, clientJob } from '../helpers/client-driven';
import { JobHarness } from '../helpers/job-harness';
import { repoRoot, type Spawned } from '../helpers/processes';

/**
 * An upstream MCP server whose tools change between the moment a job's
 * rules judged them and the moment a tools worker lends them, and a
 * withdrawal that comes while a call is still being looked at: a real tools
 * worker process, a real server process on the SDK's low-level Server.
 */

const fixture = join(repoRoot, 'dist', 'test', 'helpers', 'upstream-changing-server.js');
let h: JobHarness;
let share: string;
let slowFile: string;
let worker: Spawned;

beforeAll(async () => {
  const top = mkdtempSync(join(tmpdir(), 'airlock-upstream-stale-'));
  share = join(top, 'share');
  mkdirSync(share);
  const switchFile = join(top, 'switched');
  slowFile = join(top, 'slow');
  const toolsFile = join(top, 'tools.yaml');
  const env = { FIXTURE_SWITCH_FILE: switchFile, FIXTURE_SLOW_FILE: slowFile, FIXTURE_SLOW_MS: '3000' };
  const mcp = { servers: { up: { command: [process.execPath, fixture], env, trustAnnotations: true } }, tools: ['mcp_up_change', 'mcp_up_look'] };
  writeFileSync(toolsFile, JSON.stringify({ version: 1, roots: [share], mcp }));
  // The agent worker lists the server at its start: `look` is a read then, of a trusted server.
  const upstream = await UpstreamServers.connect({ config: toolsConfigSchema.parse(JSON.parse(readFileSync(toolsFile, 'utf8'))).mcp ?? mcp, file: toolsFile, version: 'test', log: () => undefined });
  await upstream.close();
  h = await JobHarness.create({
    rules: { ...defaultRules, rules: defaultRules.rules?.map((r) => (r.approval === undefined ? r : { ...r, approval: { ...r.approval, signatureRequired: false } })) },
    toolsInProcess: false,
    detectorRoots: [share],
    availableTools: [...availableToolNames({ files: true, services: false, http: false, commands: false }), ...upstream.specs.map((s) => s.name)],
    upstreamTools: upstream.specs,
  });
  // The server is updated (`look` now says it deletes), and the tools worker starts after: it lends that definition.
  writeFileSync(switchFile, '');
  worker = h.spawnToolsWorker({ AIRLOCK_TOOLS_CONFIG: toolsFile });
  await worker.waitFor(/workers polling airlock-tools\b/, 60_000);
}, 120_000);

afterAll(async () => {
  await h?.close();
});

test('a server whose tool list never ends (every page names another) lends nothing and holds nothing up: said once, in one line', async () => {
  const lines: string[] = [];
  const upstream = await UpstreamServers.connect({
    config: toolsConfigSchema.parse({ version: 1, mcp: { servers: { endless: { command: [process.execPath, fixture], env: { FIXTURE_ENDLESS: '1' } } }, tools: ['mcp_endless_look'] } }).mcp ?? { servers: {}, tools: [] },
    file: 'tools.yaml',
    version: 'test',
    log: (line) => lines.push(line),
  });
  await upstream.close();
  expect(upstream.specs).toEqual([]);
  expect(lines[0]).toMatch(/^airlock: MCP server endless could not be reached \(.*100 pages of its tool list and gave yet another cursor\); its tools are not offered until the worker restarts$/);
});

test("a tool the job's rules judged a read, listed destructive by the time it is sent: refused, nothing sent, whatever the tools worker lends", async () => {
  const target = join(share, 'precious.txt');
  writeFileSync(target, 'keep me');
  const job = await clientJob(h, { name: 'stale-look', requester: 'desk' });
  const answer = await job.submit('mcp_up_look', { path: target });
  expect(answer).toMatchObject({ status: 'answered', isError: true });
  expect(answer.status === 'answered' ? answer.text : '').toContain("tool look of MCP server up changed since this call was judged (its description, input schema or annotations are not the ones the job's rules and its card saw); nothing was sent");
  expect(existsSync(target)).toBe(true);
});

test('a withdrawal while the agent\'s call is still being looked at: the request it then parks is withdrawn at once, never left for a reviewer; the call is answered so', async () => {
  const target = join(share, 'log.txt');
  writeFileSync(target, '');
  const job = await clientJob(h, { name: 'withdraw-in-flight', requester: 'desk' });
  // Its card takes the server's slow listing: the call is in flight when the withdrawal comes.
  writeFileSync(slowFile, '');
  try {
    const submitted = job.submit('mcp_up_change', { path: target, line: 'sent by a revoked agent' });
    await new Promise((r) => setTimeout(r, 1000));
    const withdrawn = await h.airlock.withdrawRequests(job.jobId, { by: 'carol', reason: "withdrawn: agent desk's token was revoked" });
    expect(withdrawn).toMatchObject({ kind: 'withdrawn', requestIds: [], callKeys: [expect.any(String)] });
    const answer = await submitted;
    const done = answer.status === 'answered' ? answer : await answered(job.query, answer.callKey);
    expect(done).toMatchObject({ isError: true, text: expect.stringContaining("carol withdrew this request: withdrawn: agent desk's token was revoked.") });
  } finally {
    rmSync(slowFile, { force: true });
  }
  expect((await h.airlock.state(job.jobId)).pending).toEqual([]);
  expect(h.audit(job.jobId, 'approval_withdrawn')).toEqual([expect.objectContaining({ data: expect.objectContaining({ toolName: 'mcp_up_change', by: 'carol' }) })]);
  expect(readFileSync(target, 'utf8')).toBe('');
});
