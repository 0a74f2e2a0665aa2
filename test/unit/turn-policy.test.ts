import { generateKeyPairSync } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createPolicyActivities, decideBatch } from '../../activities/policy';
import { createTurnPolicy, type TurnPolicyInput } from '../../activities/turn-policy';
import { preflight } from '../../core/job/preflight';
import type { AssistantMessage } from '../../core/model/chat';
import { defaultRules } from '../../core/policy/default-rules';
import { buildSnapshot } from '../../core/policy/snapshot';
import { canonicalJson } from '../../core/util/canonical-json';
import { sha256Hex } from '../../core/util/sha256';
import { SqliteContentStore } from '../../host/stores/contents/sqlite';
import { createGrantSigner, createGrantVerifier } from '../../host/keys/grant-keys';
import { parseRulesDocument } from '../../host/config/rules-file';
import { createSealer } from '../../host/keys/seal';
import { MockActivityEnvironment } from '@temporalio/testing';

/**
 * The policy check inside the model turn: it decides exactly as
 * `evaluatePolicy` would on the same input, and answers "unavailable"
 * (so the job asks `evaluatePolicy` itself) whenever it cannot vouch for
 * the snapshot — never a decision on a policy the job's seal does not cover.
 */

const keys = generateKeyPairSync('ed25519');
const snapshot = buildSnapshot(parseRulesDocument(defaultRules, 'built-in'), 'built-in');
const sealer = createSealer(keys.privateKey);
const signer = createGrantSigner(keys.privateKey);
const verifier = createGrantVerifier(keys.publicKey);
const allowedTools = ['fs_read', 'fs_delete', 'fs_write'];

let dir: string;
let contents: SqliteContentStore;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'airlock-turn-policy-'));
  contents = new SqliteContentStore(join(dir, 'contents.sqlite'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const quiet = { log() {}, trace() {}, debug() {}, info() {}, warn() {}, error() {} };

/** The snapshot sealed and kept the way a job's start does it. */
async function started(jobId: string): Promise<{ seal: string }> {
  const policy = createPolicyActivities({
    loadSnapshot: async () => snapshot,
    signer,
    sealer,
    grantTtlMs: 60_000,
    audit: { write: async () => undefined, idempotent: false, prune: async () => 0 },
    contents,
  });
  const { seal } = await new MockActivityEnvironment(undefined, { logger: quiet }).run<[{ jobId: string }], { seal?: string }, typeof policy.loadPolicySnapshot>(
    policy.loadPolicySnapshot,
    { jobId },
  );
  if (seal === undefined) throw new Error('no seal');
  return { seal };
}

const memory = { deniedFingerprints: [], redirectedFingerprints: [], approvalRequests: 0, maxApprovalRequests: 5, completionRuleFires: [] };

function gateInput(jobId: string, seal: string, overrides: Partial<TurnPolicyInput> = {}): TurnPolicyInput {
  return { jobId, scope: {}, snapshotRef: sha256Hex(canonicalJson(snapshot)), policySeal: seal, memory, ruleCounters: {}, allowedTools, ...overrides };
}

const answer = (...calls: Array<{ name: string; args: unknown }>): AssistantMessage => ({
  role: 'assistant',
  content: null,
  toolCalls: calls.map((c, i) => ({ id: `call_${i}`, name: c.name, arguments: JSON.stringify(c.args) })),
});

// The store opens in beforeAll; the gate reads it on every call.
const gate = createTurnPolicy({
  get contents() {
    return contents;
  },
  sealer,
  signer,
  grantTtlMs: 60_000,
});

test('an allowed read comes back decided with a grant the tools side accepts, the plan the planner makes on the same input', async () => {
  const { seal } = await started('job-read');
  const message = answer({ name: 'fs_read', args: { path: 'notes.txt' } });
  const result = await gate(gateInput('job-read', seal), message);
  if (result.kind !== 'decided') throw new Error(`not decided: ${result.reason}`);
  expect(result.result.plan?.outcome).toBe('run');
  const grant = result.grants?.['call_0'];
  expect(verifier.verify(grant)).toBe(true);
  expect(grant?.claims).toMatchObject({ jobId: 'job-read', callId: 'call_0' });

  const calls = message.toolCalls.map((c) => preflight(c, allowedTools, snapshot.detectors.roots));
  expect(result.calls).toEqual(calls);
  const direct = decideBatch(sealer, { jobId: 'job-read', scope: {}, snapshot, policySeal: seal, calls, memory, ruleCounters: {}, now: 0 });
  expect(result.result.plan).toEqual(direct.plan);
});

test('a delete comes back as a plan that parks (or asks for facts first), with no grant', async () => {
  const { seal } = await started('job-delete');
  const result = await gate(gateInput('job-delete', seal), answer({ name: 'fs_delete', args: { path: 'old.bak' } }));
  if (result.kind !== 'decided') throw new Error(`not decided: ${result.reason}`);
  expect(result.grants).toBeUndefined();
  expect(result.result.plan?.outcome ?? (result.result.factsFor?.length ?? 0) > 0).toBeTruthy();
  expect(result.result.plan === undefined || result.result.plan.outcome === 'park').toBe(true);
});

test('unavailable, never decided, when the seal does not cover the snapshot the store holds or the store lacks it', async () => {
  const { seal } = await started('job-forged');
  const read = answer({ name: 'fs_read', args: { path: 'notes.txt' } });
  // Another job's seal, a made-up seal, a snapshot the store never held.
  const { seal: other } = await started('job-other');
  for (const input of [
    gateInput('job-forged', other),
    gateInput('job-forged', 'AAAA'),
    gateInput('job-forged', seal, { snapshotRef: sha256Hex(canonicalJson({ ...snapshot, rules: [] })) }),
  ]) {
    const result = await gate(input, read);
    expect(result.kind).toBe('unavailable');
  }
  // A snapshot someone put in the store without the agent worker's seal: still unavailable.
  const forged = { ...snapshot, rules: [] };
  const ref = await contents.put(canonicalJson(forged));
  expect((await gate(gateInput('job-forged', seal, { snapshotRef: ref }), read)).kind).toBe('unavailable');
});

test('calls too large to carry twice are left to evaluatePolicy', async () => {
  const { seal } = await started('job-large');
  const result = await gate(gateInput('job-large', seal), answer({ name: 'fs_write', args: { path: 'big.txt', content: 'x'.repeat(70_000) } }));
  expect(result).toEqual({ kind: 'unavailable', reason: 'calls too large to carry twice' });
});

test('a pass that asks for facts names, of those calls, the ones a rule could park: only their approvals are prepared with the facts', () => {
  const rules = buildSnapshot(
    parseRulesDocument(
      {
        version: 1,
        rules: [
          { id: 'writes-that-replace', version: 1, name: 'writes that replace', scope: { tools: ['fs_write'] }, when: { detector: 'destroys_data' }, action: 'request_approval' },
          { id: 'moves-audited', version: 1, name: 'moves', scope: { tools: ['fs_move'] }, when: { detector: 'destroys_data' }, action: 'audit_only' },
        ],
      },
      'test',
    ),
    'test',
  );
  const seal = sealer.seal('policy', 'job-facts', rules);
  const tools = ['fs_write', 'fs_move'];
  const calls = answer({ name: 'fs_write', args: { path: 'a.txt', content: 'x', mode: 'overwrite' } }, { name: 'fs_move', args: { from: 'b.txt', to: 'c.txt', overwrite: true } }).toolCalls.map(
    (c) => preflight(c, tools, rules.detectors.roots),
  );
  const result = decideBatch(sealer, { jobId: 'job-facts', scope: {}, snapshot: rules, policySeal: seal, calls, memory, ruleCounters: {}, now: 0 });
  expect(result.factsFor).toEqual(['call_0', 'call_1']);
  expect(result.prepareFor).toEqual(['call_0']);
});
