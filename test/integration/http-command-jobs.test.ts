import { existsSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { commandsConfigSchema } from '../../core/config/tools/commands';
import { hostsConfigSchema } from '../../core/config/tools/hosts';
import { commandCapabilityFor } from '../../host/commands/command-capability';
import { httpCapabilityFor } from '../../host/net/http-capability';
import { availableToolNames } from '../../core/tools/registry';
import { JobHarness } from '../helpers/job-harness';
import { recordingServer, type RecordingServer } from '../helpers/recording-server';

/**
 * http_request and command_run through whole jobs: the replay model asks,
 * policy decides on each call's own category, the tools worker runs the
 * module with its capability, and the model, the reviewer and the audit
 * log see only masked text.
 */

let h: JobHarness;
let server: RecordingServer;
let bin: string;
const SECRET = 'zq9-job-level-credential-7781';

function script(name: string, body: string): string {
  const path = join(bin, name);
  writeFileSync(path, `#!/bin/sh\n${body}\n`, { mode: 0o755 });
  return path;
}

beforeAll(async () => {
  bin = mkdtempSync(join(tmpdir(), 'airlock-job-bin-'));
  script('hello', 'echo "hello from $(pwd -P):" "$@"');
  script('swap', 'echo original');
  // Echoes the request's headers as its body.
  server = await recordingServer('127.0.0.1', (req, res) => res.end(JSON.stringify({ method: req.method, headers: req.headers, body: req.body })));
  h = await JobHarness.create({
    rules: {
      version: 1,
      rules: [
        { id: 'approve-sends', version: 1, name: 'Sending out needs approval', scope: { categories: ['external_send'] }, action: 'request_approval' },
        // Commands run in a named folder wait for a person; those in the first root run at once.
        { id: 'approve-commands-in-folders', version: 1, name: 'Commands in a named folder need approval', scope: { tools: ['command_run'] }, when: { arg: 'cwd', exists: true }, action: 'request_approval' },
      ],
    },
    availableTools: availableToolNames({ files: true, services: false, http: true, commands: true }),
    capabilities: (roots) => ({
      http: httpCapabilityFor(hostsConfigSchema.parse({ allowInternal: ['127.0.0.1'] })),
      commands: commandCapabilityFor(commandsConfigSchema.parse({ hello: { path: join(bin, 'hello') }, swap: { path: join(bin, 'swap') }, env: { path: '/usr/bin/printenv' } }), roots, bin),
    }),
  });
});
afterAll(async () => {
  await h.close();
  await server.close();
  rmSync(bin, { recursive: true, force: true });
});
afterEach(async () => h.terminateRunning());

const turns = (...calls: Array<{ name: string; arguments: Record<string, unknown> }>) => ({
  turns: [...calls.map((c) => ({ tool_calls: [c] })), { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] }],
});

test('an allowed GET runs at once (category network); the secret header reaches the server and no output', async () => {
  const before = server.received.length;
  const { jobId } = await h.start({ script: turns({ name: 'http_request', arguments: { method: 'GET', url: `${server.origin}/status`, headers: { Authorization: `Bearer ${SECRET}` } } }) });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(server.received.slice(before)).toHaveLength(1);
  expect(server.received.at(-1)!.headers.authorization).toBe(`Bearer ${SECRET}`);
  const output = h.toolResults(jobId).get('call_0_0') ?? '';
  expect(output).toMatch(/^HTTP 200 OK \(GET http:\/\/127\.0\.0\.1:\d+\/status, connected to 127\.0\.0\.1\)/);
  expect(output).toContain('"authorization":"***"');
  // No tool result, audit event or view of the job's state holds the credential (the model's own call does: it wrote it).
  expect(JSON.stringify([...h.toolResults(jobId).values()])).not.toContain(SECRET);
  expect(JSON.stringify(h.audit(jobId))).not.toContain(SECRET);
  expect(JSON.stringify(await h.state(jobId))).not.toContain(SECRET);
});

test('a POST parks (category external_send), the reviewer sees where it goes, and it is sent once when approved', async () => {
  const before = server.received.length;
  const { jobId } = await h.start({ script: turns({ name: 'http_request', arguments: { method: 'POST', url: `${server.origin}/notify`, body: 'backup done', headers: { 'X-Api-Key': SECRET } } }) });
  const parked = await h.waitForPending(jobId);
  const request = parked.pending[0]!;
  expect(request).toMatchObject({ toolName: 'http_request', ruleId: 'approve-sends' });
  expect(request.observed[0]).toMatchObject({ kind: 'subject', subject: `${server.origin}/notify`, exists: true, identity: '127.0.0.1' });
  expect(JSON.stringify(parked)).not.toContain(SECRET);
  expect(server.received.length).toBe(before);

  const decided = await h.airlock.sendDecision(jobId, { requestId: request.requestId, fingerprint: request.fingerprint, nonce: request.nonce, decision: 'approve', reviewer: 'alice' });
  expect(decided).toMatchObject({ accepted: true });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(server.received.slice(before).map((r) => [r.method, r.body])).toEqual([['POST', 'backup done']]);
  expect(h.toolResults(jobId).get('call_0_0')).toMatch(/^HTTP 200 OK \(POST /);
  expect(JSON.stringify(h.audit(jobId))).not.toContain(SECRET);
  expect(JSON.stringify([...h.toolResults(jobId).values()])).not.toContain(SECRET);
});

test('a request to an address the tools config does not allow is refused by the tool, and the model is told why', async () => {
  const { jobId } = await h.start({ script: turns({ name: 'http_request', arguments: { method: 'GET', url: 'http://169.254.169.254/latest/meta-data/' } }) });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(h.toolResults(jobId).get('call_0_0')).toMatch(/^Refused: 169\.254\.169\.254 is a cloud metadata address/);
});

test('an allowed command runs with literal arguments in a folder inside the roots, without the worker environment', async () => {
  process.env.AIRLOCK_CANARY_SECRET = 'canary-job-level-31337';
  try {
    const { jobId } = await h.start({
      script: turns({ name: 'command_run', arguments: { argv: ['hello', '; touch pwned', '$(id)'] } }, { name: 'command_run', arguments: { argv: ['env'] } }),
    });
    expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
    const results = h.toolResults(jobId);
    expect(results.get('call_0_0')).toContain(`hello from ${h.root}: ; touch pwned $(id)`);
    expect(results.get('call_0_0')).toMatch(/: exit code 0/);
    expect(existsSync(join(h.root, 'pwned'))).toBe(false);
    expect(results.get('call_1_0')).toContain('LANG=C.UTF-8');
    expect(results.get('call_1_0')).not.toContain('AIRLOCK_CANARY_SECRET');
    expect(results.get('call_1_0')).not.toContain('canary-job-level-31337');
  } finally {
    delete process.env.AIRLOCK_CANARY_SECRET;
  }
});

test('a command outside the allowlist is refused', async () => {
  const { jobId } = await h.start({ script: turns({ name: 'command_run', arguments: { argv: ['rm', '-rf', h.root] } }) });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(h.toolResults(jobId).get('call_0_0')).toMatch(/^Refused: "rm" is not an allowed command; allowed: hello, swap, env/);
  expect(existsSync(h.root)).toBe(true);
});

test('a program replaced while its approval waits is refused, and the new one never runs', async () => {
  script('swap', 'echo original');
  const { jobId } = await h.start({ script: turns({ name: 'command_run', arguments: { argv: ['swap'], cwd: '.' } }) });
  const parked = await h.waitForPending(jobId);
  const request = parked.pending[0]!;
  expect(request.observed[0]).toMatchObject({ kind: 'subject', subject: 'swap', exists: true, facts: expect.objectContaining({ path: join(bin, 'swap') }) });
  const marker = join(h.root, 'replacement-ran');
  writeFileSync(join(bin, 'swap.new'), `#!/bin/sh\ntouch ${marker}\n`, { mode: 0o755 });
  renameSync(join(bin, 'swap.new'), join(bin, 'swap'));
  await h.airlock.sendDecision(jobId, { requestId: request.requestId, fingerprint: request.fingerprint, nonce: request.nonce, decision: 'approve', reviewer: 'alice' });
  expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
  expect(h.toolResults(jobId).get('call_0_0')).toMatch(/the program changed since it was checked/);
  expect(existsSync(marker)).toBe(false);
});
