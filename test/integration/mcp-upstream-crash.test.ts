import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { toolsConfigSchema } from '../../core/config/tools/tools-config';
import { availableToolNames } from '../../core/tools/registry';
import { UpstreamServers } from '../../host/mcp-upstream/upstream-servers';
import { JobHarness } from '../helpers/job-harness';
import { answered, clientJob as startClientJob } from '../helpers/client-driven';
import { freePort } from '../helpers/ports';
import { repoRoot, spawnNode, type Spawned } from '../helpers/processes';

/**
 * Upstream MCP servers reached over HTTP (with the header the tools config
 * gives) and over stdio, and a crash in the middle of an upstream call:
 * the tools worker killed with SIGKILL while the upstream works on an
 * approved call. airlock cannot see what the upstream did, and the tool
 * does not say it is idempotent, so the retried attempt reports the
 * outcome unknown and never sends the call a second time.
 */

const fixture = join(repoRoot, 'dist', 'test', 'helpers', 'upstream-fixture-server.js');
let h: JobHarness;
let share: string;
let toolsFile: string;
let web: Spawned;
let worker: Spawned;

beforeAll(async () => {
  const top = mkdtempSync(join(tmpdir(), 'airlock-upstream-crash-'));
  share = join(top, 'share');
  mkdirSync(share);
  const port = await freePort();
  web = spawnNode('dist/test/helpers/upstream-fixture-server.js', ['--http', String(port)], { ...process.env });
  await web.waitFor(/fixture upstream listening/);
  toolsFile = join(top, 'tools.yaml');
  const mcp = {
    servers: {
      fix: { command: [process.execPath, fixture] },
      web: { url: `http://127.0.0.1:${port}/mcp`, headers: { Authorization: 'Bearer upstream-secret' } },
    },
    tools: ['mcp_fix_slow_append', 'mcp_web_append_line'],
  };
  writeFileSync(toolsFile, JSON.stringify({ version: 1, roots: [share], mcp }));
  const upstream = await UpstreamServers.connect({ config: toolsConfigSchema.parse(JSON.parse(readFileSync(toolsFile, 'utf8'))).mcp ?? mcp, file: toolsFile, version: 'test' });
  await upstream.close();
  expect(upstream.specs.map((s) => s.name).sort()).toEqual(['mcp_fix_slow_append', 'mcp_web_append_line']);
  h = await JobHarness.create({
    rules: { version: 1, rules: [{ id: 'approve-upstream', version: 1, name: 'upstream calls need a person', scope: { tools: ['mcp_fix_slow_append', 'mcp_web_append_line'] }, action: 'request_approval' }] },
    toolsInProcess: false,
    detectorRoots: [share],
    availableTools: [...availableToolNames({ files: true, services: false, http: false, commands: false }), ...upstream.specs.map((s) => s.name)],
    upstreamTools: upstream.specs,
  });
  worker = startWorker();
  await worker.waitFor(/workers polling airlock-tools\b/, 60_000);
}, 120_000);

afterAll(async () => {
  web?.child.kill('SIGKILL');
  await h?.close();
});

function startWorker(): Spawned {
  return h.spawnToolsWorker({ AIRLOCK_TOOLS_CONFIG: toolsFile });
}

const clientJob = (name: string) => startClientJob(h, { name: `upstream-${name}`, requester: 'desk' });

test('an upstream over HTTP gets the header the tools config gives; an approved call runs once', async () => {
  const job = await clientJob('http');
  const parked = await job.submit('mcp_web_append_line', { path: join(share, 'web.log'), line: 'hello' });
  expect(parked).toMatchObject({ status: 'parked', ruleId: 'approve-upstream' });
  const requestId = parked.status === 'parked' ? parked.requestId : '';
  expect(await h.cli(['approve', job.jobId, '--request', requestId, '--reviewer', 'alice'])).toMatchObject({ code: 0 });
  const done = await answered(job.query, parked.callKey, 30_000);
  expect(done).toMatchObject({ isError: false });
  expect(done.text).toContain('appended to');
  expect(readFileSync(join(share, 'web.log'), 'utf8')).toBe('hello\n');
});

test('kill -9 of the tools worker while the upstream works on an approved call: the outcome is unknown, and the call is not sent again', async () => {
  const target = join(share, 'slow.log');
  const job = await clientJob('crash');
  const parked = await job.submit('mcp_fix_slow_append', { path: target, line: 'once', ms: 4000 });
  const requestId = parked.status === 'parked' ? parked.requestId : '';
  expect(await h.cli(['approve', job.jobId, '--request', requestId, '--reviewer', 'alice'])).toMatchObject({ code: 0 });
  // The upstream has the call: the worker dies before it can hear the answer.
  for (let i = 0; i < 200 && !existsSync(`${target}.started`); i++) await new Promise((r) => setTimeout(r, 100));
  expect(existsSync(`${target}.started`)).toBe(true);
  worker.child.kill('SIGKILL');
  await worker.exited();
  worker = startWorker();
  const done = await answered(job.query, parked.callKey, 90_000);
  expect(done.isError).toBe(true);
  expect(done.text).toMatch(/^Outcome unknown: /);
  expect(done.text).toContain('whether fix ran slow_append cannot be seen from here');
  // The upstream may have finished on its own (its process outlived the worker), but nothing sent it twice.
  await new Promise((r) => setTimeout(r, 4500));
  expect(existsSync(target) ? readFileSync(target, 'utf8') : '').toMatch(/^(once\n)?$/);
}, 150_000);
