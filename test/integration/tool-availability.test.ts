import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MockActivityEnvironment } from '@temporalio/testing';
import { createToolGateActivities } from '../../activities/tool-gate';
import { parseConfig } from '../../core/config/config';
import { FailureTypes } from '../../core/temporal/failure-types';
import { callFingerprint } from '../../core/approval/fingerprint';
import type { ServiceState } from '../../core/tools/observed-state';
import type { ServiceCapability } from '../../core/tools/capabilities/services';
import { createGrantSigner, createGrantVerifier } from '../../host/keys/grant-keys';
import { SqliteNonceStore } from '../../host/stores/nonces/sqlite';
import { Roots } from '../../host/fs/roots';
import { loadToolsSetup, type ToolsSetup } from '../../host/config/tools-config-file';
import { JobHarness } from '../helpers/job-harness';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-availability-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

async function setupFrom(name: string, text: string): Promise<ToolsSetup> {
  const file = join(dir, name);
  writeFileSync(file, text);
  return loadToolsSetup(parseConfig({ AIRLOCK_DATA_DIR: join(dir, 'data'), AIRLOCK_TOOLS_CONFIG: file }));
}

function offered(tools: unknown): string[] {
  return Array.isArray(tools) ? tools.map((t: { function?: { name?: string } }) => t.function?.name ?? '') : [];
}

describe('a job', () => {
  let h: JobHarness;
  afterAll(async () => h.close());

  test('whose tools config lists no services is never offered service tools, and a forged call to one runs nothing', async () => {
    const setup = await setupFrom('files-only.yaml', 'version: 1\n');
    h = await JobHarness.create({ availableTools: setup.availableTools });
    const { jobId } = await h.start({
      script: {
        turns: [
          { tool_calls: [{ name: 'service_status', arguments: { service: 'jellyfin' } }, { name: 'fs_list', arguments: { path: '.' } }] },
          { tool_calls: [{ name: 'complete', arguments: { summary: 'done' } }] },
        ],
      },
    });
    expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
    const requests = h.requestsOf(jobId);
    for (const request of requests) {
      expect(offered(request.tools)).not.toContain('service_status');
      expect(offered(request.tools)).toContain('fs_list');
    }
    const system = String(requests[0]?.messages[0]?.content);
    expect(system).toContain('- fs_list (read): List the entries of a directory');
    expect(system).not.toContain('service_status');
    const results = h.toolResults(jobId);
    expect(results.get('call_0_0')).toBe('Error: tool service_status is not allowed for this job.');
    // Nothing of the forged call reached the tools side; the allowed call beside it ran.
    expect(h.audit(jobId, 'tool_executed').map((e) => e.data.toolName)).toEqual(['fs_list']);
  });

  test('whose tools config lists services is offered service_status, named in its system prompt', async () => {
    const setup = await setupFrom('services.yaml', 'version: 1\nservices:\n  web: { adapter: process, command: [/usr/bin/web], pidFile: /run/web.pid }\n');
    h.setAvailableTools(setup.availableTools);
    const { jobId } = await h.start({ script: { turns: [{ tool_calls: [{ name: 'complete', arguments: { summary: 'looked' } }] }] } });
    expect(await h.result(jobId)).toMatchObject({ status: 'completed' });
    const [first] = h.requestsOf(jobId);
    expect(offered(first?.tools)).toContain('service_status');
    expect(String(first?.messages[0]?.content)).toContain('- service_status (read):');
  });
});

describe('the tools worker', () => {
  const keys = generateKeyPairSync('ed25519');
  const signer = createGrantSigner(keys.privateKey);
  let root: string;
  let nonces: SqliteNonceStore;
  beforeEach(() => {
    root = mkdtempSync(join(dir, 'root-'));
    nonces = new SqliteNonceStore(join(root, '..', `nonces-${Math.random().toString(36).slice(2)}.sqlite`));
  });
  afterEach(() => nonces.close());

  test('without services refuses a service tool at every step, even with a valid grant, and spends no nonce', async () => {
    const gate = createToolGateActivities({ roots: await Roots.create([root]), nonces, verifier: createGrantVerifier(keys.publicKey) });
    const env = new MockActivityEnvironment();
    const args = { service: 'jellyfin' };
    await expect(gate.prepareApproval({ toolName: 'service_status', args })).rejects.toMatchObject({
      type: FailureTypes.ToolUnavailable,
      message: 'tool service_status is not configured on this tools worker (its tools config grants no services)',
    });
    const fingerprint = callFingerprint({ jobId: 'job-1', scope: {}, toolName: 'service_status', normalizedArgs: args, ruleId: null, ruleVersion: null });
    const nonce = 'ab'.repeat(16);
    const grant = signer.sign({ v: 1, jobId: 'job-1', callId: 'c1', fingerprint, nonce, expiresAt: Date.now() + 60_000 });
    const input = { jobId: 'job-1', callId: 'c1', scope: {}, toolName: 'service_status', args, ruleId: null, ruleVersion: null, grant };
    await expect(env.run(gate.execute, input)).rejects.toMatchObject({ type: FailureTypes.ToolUnavailable });
    expect(await nonces.lookup(nonce)).toBeUndefined();
    const check = { allowedTools: ['service_status'], reviewer: 'alice', reviewers: null, separateRequester: false, requester: 'bob', observed: [] };
    expect(await gate.revalidate({ toolName: 'service_status', args, ...check })).toEqual({
      ok: false,
      reason: 'tool service_status is not configured on this tools worker (its tools config grants no services)',
    });
  });

  test('lends a configured capability to the tool module, which only sees configured services', async () => {
    // A stand-in for an adapter: the gate and the module under test, not the adapter, are what this checks.
    const web: ServiceState = { kind: 'service', service: 'web', adapter: 'process', exists: true, identity: 'pid 4242', running: true, health: 'healthy', status: 'running', facts: {} };
    const services: ServiceCapability = {
      names: ['web'],
      observe: (name) => Promise.resolve(name === 'web' ? web : { ...web, service: name, exists: false, identity: null, running: false, health: 'unknown', status: 'not configured' }),
      act: () => Promise.reject(new Error('not used')),
    };
    const gate = createToolGateActivities({ roots: await Roots.create([root]), nonces, verifier: createGrantVerifier(keys.publicKey), capabilities: { services } });
    const env = new MockActivityEnvironment();
    const prepared = await gate.prepareApproval({ toolName: 'service_status', args: { service: 'web' } });
    expect(prepared.observed).toEqual([web]);
    const run = async (service: string, callId: string) => {
      const args = { service };
      const fingerprint = callFingerprint({ jobId: 'job-1', scope: {}, toolName: 'service_status', normalizedArgs: args, ruleId: null, ruleVersion: null });
      const grant = signer.sign({ v: 1, jobId: 'job-1', callId, fingerprint, nonce: callId.padEnd(32, '0'), expiresAt: Date.now() + 60_000 });
      return env.run(gate.execute, { jobId: 'job-1', callId, scope: {}, toolName: 'service_status', args, ruleId: null, ruleVersion: null, grant });
    };
    expect(await run('web', 'c2')).toMatchObject({ ok: true, output: 'web (process): healthy — running' });
    expect(await run('postgres', 'c3')).toMatchObject({ ok: false, output: 'Refused: not configured' });
  });
});
